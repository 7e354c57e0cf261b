def enqueue(queue, job):
    queue.push(job)
    return len(queue)
