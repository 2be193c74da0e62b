//! A fixed pool of worker threads that carry out client requests, each with
//! its own reusable buffers, so requests from one connection run
//! concurrently (a client at queue depth 16 has 16 requests in progress).

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::core::Scratch;

/// A unit of work.
pub type Job = Box<dyn FnOnce(&mut Scratch) + Send>;

/// The pool; dropping it lets the workers finish queued jobs and exit.
pub struct WorkerPool {
    sender: Mutex<Option<Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl WorkerPool {
    /// Starts `count` workers.
    pub fn new(count: usize) -> WorkerPool {
        let (sender, receiver) = channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let threads = (0..count.max(1))
            .map(|i| {
                let receiver: Arc<Mutex<Receiver<Job>>> = receiver.clone();
                std::thread::Builder::new()
                    .name(format!("cc-worker-{i}"))
                    .spawn(move || {
                        let mut scratch = Scratch::default();
                        loop {
                            let job = receiver.lock().unwrap().recv();
                            match job {
                                Ok(job) => job(&mut scratch),
                                Err(_) => break,
                            }
                        }
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        WorkerPool { sender: Mutex::new(Some(sender)), threads: Mutex::new(threads) }
    }

    /// Queues a job; false once the pool is shut down.
    pub fn submit(&self, job: Job) -> bool {
        match self.sender.lock().unwrap().as_ref() {
            Some(sender) => sender.send(job).is_ok(),
            None => false,
        }
    }

    /// Finishes queued jobs and stops the workers.
    pub fn shutdown(&self) {
        self.sender.lock().unwrap().take();
        for handle in self.threads.lock().unwrap().drain(..) {
            let _ = handle.join();
        }
    }
}
