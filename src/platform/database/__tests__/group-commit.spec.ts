import { describe, expect, it } from '@jest/globals';
import { GroupCommitter, type BatchOutcome } from '../group-commit.js';
import { waitFor } from '../../../../test/support/wait.js';

/** A batch function whose batches finish only when the test says so. */
function controlledBatches<R>() {
  const started: { items: number[]; finish: (outcomes: BatchOutcome<R>[] | Error) => void }[] = [];
  const run = (items: number[]) =>
    new Promise<BatchOutcome<R>[]>((resolve, reject) => {
      started.push({ items, finish: (o) => (o instanceof Error ? reject(o) : resolve(o)) });
    });
  return { started, run };
}

const ok = <R>(value: R): BatchOutcome<R> => ({ ok: true, value });

describe('GroupCommitter', () => {
  it('callers arriving while batches run wait for a free slot and go together, at most maxBatch at a time', async () => {
    const { started, run } = controlledBatches<string>();
    const committer = new GroupCommitter(run, { maxBatch: 3, maxInFlight: 1 });
    const first = committer.submit(1);
    await waitFor(() => started.length, (n) => n === 1, { what: 'the first batch' });
    const rest = [2, 3, 4, 5, 6].map((i) => committer.submit(i));
    expect(committer.waiting).toBe(5);
    started[0].finish([ok('one')]);
    expect(await first).toBe('one');
    await waitFor(() => started.length, (n) => n === 2, { what: 'the second batch' });
    expect(started[1].items).toEqual([2, 3, 4]);
    started[1].finish(started[1].items.map((i) => ok(`#${i}`)));
    await waitFor(() => started.length, (n) => n === 3, { what: 'the third batch' });
    expect(started[2].items).toEqual([5, 6]);
    started[2].finish(started[2].items.map((i) => ok(`#${i}`)));
    expect(await Promise.all(rest)).toEqual(['#2', '#3', '#4', '#5', '#6']);
  });

  it('runs up to maxInFlight batches at once', async () => {
    const { started, run } = controlledBatches<number>();
    const committer = new GroupCommitter(run, { maxBatch: 100, maxInFlight: 2 });
    const a = committer.submit(1);
    await waitFor(() => started.length, (n) => n === 1);
    const b = committer.submit(2);
    await waitFor(() => started.length, (n) => n === 2);
    const c = committer.submit(3);
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toHaveLength(2);
    started[1].finish([ok(20)]);
    await waitFor(() => started.length, (n) => n === 3);
    started[0].finish([ok(10)]);
    started[2].finish([ok(30)]);
    expect(await Promise.all([a, b, c])).toEqual([10, 20, 30]);
  });

  it('each caller gets its own outcome; a batch that throws, or answers the wrong count, rejects all of its callers', async () => {
    const { started, run } = controlledBatches<string>();
    const committer = new GroupCommitter(run, { maxBatch: 10, maxInFlight: 1 });
    const hold = committer.submit(0);
    await waitFor(() => started.length, (n) => n === 1);
    const mixed = [1, 2].map((i) => committer.submit(i).then((v) => v, (e) => `rejected: ${(e as Error).message}`));
    started[0].finish([ok('held')]);
    await hold;
    await waitFor(() => started.length, (n) => n === 2);
    started[1].finish([ok('fine'), { ok: false, error: new Error('its own') }]);
    expect(await Promise.all(mixed)).toEqual(['fine', 'rejected: its own']);

    const failed = [3, 4].map((i) => committer.submit(i).catch((e) => (e as Error).message));
    await waitFor(() => started.length, (n) => n === 3);
    started[2].finish(new Error('connection lost'));
    expect(await Promise.all(failed)).toEqual(['connection lost', 'connection lost']);

    const miscounted = [5, 6].map((i) => committer.submit(i).catch((e) => (e as Error).message));
    await waitFor(() => started.length, (n) => n === 4);
    started[3].finish([ok('only one')]);
    expect(await Promise.all(miscounted)).toEqual(Array(2).fill('batch of 2 answered 1 outcomes'));
  });

  it('drained() resolves only once nothing is queued or running', async () => {
    const { started, run } = controlledBatches<number>();
    const committer = new GroupCommitter(run, { maxBatch: 1, maxInFlight: 1 });
    await committer.drained();
    const both = [committer.submit(1), committer.submit(2)];
    let drained = false;
    const done = committer.drained().then(() => (drained = true));
    await waitFor(() => started.length, (n) => n === 1);
    started[0].finish([ok(1)]);
    await waitFor(() => started.length, (n) => n === 2);
    expect(drained).toBe(false);
    started[1].finish([ok(2)]);
    await done;
    expect(await Promise.all(both)).toEqual([1, 2]);
  });
});
