export * from './queues';
export { createWorkQueues, enqueue, MAX_PRIORITY, type WorkQueues } from './work-queues';
