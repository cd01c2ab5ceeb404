import { memoryKeyring } from '@cairn/sdk';
import { describeKeyringConformance } from '@cairn/testing';

// One process's keyring: every "process" of a test is the same instance.
describeKeyringConformance('memoryKeyring', () => {
  const keyring = memoryKeyring();
  return { keyring: () => keyring };
});
