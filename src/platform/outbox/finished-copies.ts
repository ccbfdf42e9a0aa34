import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';

/**
 * Deletes, in one atomic call, the copy BullMQ keeps of each given job that it holds as finished
 * (its failed or completed set, with no lock), and returns the ids it deleted. A job waiting,
 * delayed or running is left alone: only a finished copy is taken out of BullMQ's hands.
 * Our jobs have no parent, children, repeat or deduplication id, so a finished job is its set
 * entry and its keys (those BullMQ's own removeJob deletes).
 * KEYS: the failed set, the completed set. ARGV: the job key prefix, then the job ids.
 */
const DROP_FINISHED_COPIES = `
local dropped = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local jobKey = ARGV[1] .. id
  if redis.call('EXISTS', jobKey .. ':lock') == 0
     and redis.call('ZREM', KEYS[1], id) + redis.call('ZREM', KEYS[2], id) > 0 then
    redis.call('DEL', jobKey, jobKey .. ':logs', jobKey .. ':dependencies', jobKey .. ':processed', jobKey .. ':failed', jobKey .. ':unsuccessful')
    dropped[#dropped + 1] = id
  end
end
return dropped`;

export async function dropFinishedCopies(redis: Redis, queue: Queue, jobIds: string[]): Promise<string[]> {
  if (jobIds.length === 0) return [];
  return (await redis.eval(DROP_FINISHED_COPIES, 2, queue.toKey('failed'), queue.toKey('completed'), queue.toKey(''), ...jobIds)) as string[];
}
