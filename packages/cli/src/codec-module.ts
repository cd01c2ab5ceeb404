/**
 * The module `--codec` (CAIRN_CODEC) names: the payload codec the runs' workers encode with, so that a command
 * reads their payloads decoded (`protectPayloads`).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isCairnError, PayloadSealer, type PayloadCodec, type ProtectOptions } from '@cairn/sdk';
import { UsageError } from './cli-errors.js';

/**
 * Imports the module at `path` and reads `codec` (a `PayloadCodec` or an array of them, in the order they encode)
 * and the optional `decodeWith` from its exports, or from its default export. Throws `UsageError` when there is
 * no file at `path` or it exports no usable codec; an error the module throws while loading goes through.
 */
export async function loadCodecModule(path: string): Promise<ProtectOptions> {
  const file = resolve(path);
  if (!existsSync(file)) throw new UsageError(`No codec module at ${file} (--codec, CAIRN_CODEC).`);
  const imported = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const fromDefault = imported.default;
  // A default export object wins over named exports, as `--module` reads its module.
  const exports =
    typeof fromDefault === 'object' && fromDefault !== null
      ? { ...imported, ...(fromDefault as Record<string, unknown>) }
      : imported;
  const codec = codecsOf(path, 'codec', exports.codec);
  if (codec === undefined || codec.length === 0) {
    throw new UsageError(
      `${path} exports no codec: export \`codec\` (a PayloadCodec such as aesGcmCodec(...), or an array of ` +
        'them), as a named export or on its default export.',
    );
  }
  const decodeWith = codecsOf(path, 'decodeWith', exports.decodeWith);
  const options: ProtectOptions = {
    codec,
    ...(decodeWith === undefined ? {} : { decodeWith }),
  };
  try {
    // What `protectPayloads` would refuse (a codec's name out of its pattern), refused here as a usage error.
    new PayloadSealer(options);
  } catch (error) {
    if (isCairnError(error) && error.code === 'INVALID_ARGUMENT') {
      throw new UsageError(`${path}: ${error.message}`);
    }
    throw error;
  }
  return options;
}

/** The codecs an export holds (one, or an array), or undefined when it is not exported. */
function codecsOf(path: string, name: string, value: unknown): PayloadCodec[] | undefined {
  if (value === undefined) return undefined;
  const list = Array.isArray(value) ? (value as unknown[]) : [value];
  for (const item of list) {
    const codec = item as Partial<PayloadCodec> | null;
    if (
      typeof codec?.name !== 'string' ||
      typeof codec.encode !== 'function' ||
      typeof codec.decode !== 'function'
    ) {
      throw new UsageError(
        `${path}: \`${name}\` holds something that is not a PayloadCodec ({ name, encode, decode }).`,
      );
    }
  }
  return list as PayloadCodec[];
}
