import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { toStoreError } from './errors.js';

// What ioredis Cluster throws while a master fails over or slots move (issue 20): each is a transition a
// retry outlives, so each must be a retryable STORE_UNAVAILABLE, whatever error it carries inside.
const transitions: Array<[string, Error]> = [
  [
    'redirections exhausted while the cluster is down',
    new Error(
      'Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down',
    ),
  ],
  [
    'redirections exhausted on a closed connection',
    new Error('Too many Cluster redirections. Last error: Error: Connection is closed.'),
  ],
  ['CLUSTERDOWN', new ReplyError('CLUSTERDOWN The cluster is down')],
  ['CLUSTERDOWN of a hash slot', new ReplyError('CLUSTERDOWN Hash slot not served')],
  ['TRYAGAIN', new ReplyError('TRYAGAIN Multiple keys request during rehashing of slot')],
  ['MOVED', new ReplyError('MOVED 3999 127.0.0.1:6381')],
  ['ASK', new ReplyError('ASK 3999 127.0.0.1:6381')],
  [
    'a replica that is not a master yet',
    new ReplyError("READONLY You can't write against a read only replica."),
  ],
];

describe('toStoreError on a Redis Cluster in transition', () => {
  it.each(transitions)('%s is a retryable STORE_UNAVAILABLE', (_why, error) => {
    const mapped = toStoreError(error, 'save a checkpoint', 'cairn');
    expect(mapped).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      retryable: true,
      data: { operation: 'save a checkpoint', driverMessage: error.message },
    });
  });

  it('keeps a script error that is not a transition a STORE_FAILED', () => {
    const mapped = toStoreError(
      new ReplyError('ERR Error running script: attempt to compare nil with number'),
      'save a checkpoint',
      'cairn',
    );
    expect(mapped).toMatchObject({ code: 'STORE_FAILED', retryable: false });
  });
});
