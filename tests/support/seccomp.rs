//! A seccomp filter for a child process, as container runtimes install one: the listed system
//! calls fail with the given errno, everything else is allowed. It is installed between fork and
//! exec (`pre_exec`), so only the program under test runs with it.
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The io_uring system calls, as Docker's and containerd's default profiles deny them.
pub const IO_URING: [libc::c_long; 3] = [
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

/// Makes `denied` system calls fail with `errno` in the process `cmd` starts.
pub fn deny(cmd: &mut Command, denied: &[libc::c_long], errno: i32) {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    // Load the system call number (offset 0 of seccomp_data); for each denied one, jump to the
    // errno return; otherwise allow.
    let mut prog = vec![stmt(LD_W_ABS, 0)];
    for (i, &nr) in denied.iter().enumerate() {
        let to_deny = (denied.len() - i) as u8;
        prog.push(libc::sock_filter {
            code: JEQ_K,
            jt: to_deny,
            jf: 0,
            k: nr as u32,
        });
    }
    prog.push(stmt(RET_K, RET_ALLOW));
    prog.push(stmt(RET_K, RET_ERRNO | (errno as u32 & 0xffff)));
    let filter = prog.into_boxed_slice();
    // SAFETY: the closure runs in the child between fork and exec and only calls prctl(2), which
    // is async-signal-safe, with a program built (and owned by the closure) before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let fprog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &fprog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
