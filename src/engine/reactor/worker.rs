//! The blocking-job thread both reactors use: jobs go in with their user data, results come back
//! the same way and ring an eventfd the reactor watches, so a job's end is one more completion.
use super::Job;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{mpsc, Arc};
use std::thread;

pub(super) struct Worker {
    jobs: Option<mpsc::Sender<(u64, Job)>>,
    done: mpsc::Receiver<(u64, i32)>,
    /// Rung once per finished job.
    pub(super) wake: Arc<OwnedFd>,
    /// The reactor's read on `wake` in flight (io_uring), by its user data.
    pub(super) armed: Option<u64>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Worker {
    pub(super) fn start() -> io::Result<Worker> {
        let wake = Arc::new(super::super::sys::eventfd()?);
        let ring_it = wake.clone();
        let (job_tx, job_rx) = mpsc::channel::<(u64, Job)>();
        let (done_tx, done_rx) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("file-jobs".into())
            .spawn(move || {
                for (ud, job) in job_rx {
                    let res = super::completion_result(job().map(|()| 0));
                    if done_tx.send((ud, res)).is_err() {
                        break;
                    }
                    super::super::sys::eventfd_signal(ring_it.as_raw_fd());
                }
            })?;
        Ok(Worker {
            jobs: Some(job_tx),
            done: done_rx,
            wake,
            armed: None,
            thread: Some(thread),
        })
    }

    /// Hands `job` to the thread; false if the thread is gone.
    pub(super) fn send(&self, ud: u64, job: Job) -> bool {
        self.jobs
            .as_ref()
            .is_some_and(|tx| tx.send((ud, job)).is_ok())
    }

    /// The results of the jobs that finished since the last call.
    pub(super) fn finished(&self) -> impl Iterator<Item = (u64, i32)> + '_ {
        self.done.try_iter()
    }

    /// Lets the thread finish the jobs it has and waits for it.
    pub(super) fn stop(&mut self) {
        self.armed = None;
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
