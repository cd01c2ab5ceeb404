import { createHash } from 'node:crypto';
import { canonicalJson } from './json.js';

/** A short structural hash of a definition's shape: equal shapes give equal signatures. */
export function structuralSignature(shape: unknown): string {
  return createHash('sha256').update(canonicalJson(shape)).digest('hex').slice(0, 16);
}
