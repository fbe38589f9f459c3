//! Attach an empty BPF program to `sys_enter` and hold it until killed:
//! scripts/bench-trace.sh's floor for the tax a `sys_enter` program puts on
//! every syscall of the host (root, or CAP_BPF + CAP_PERFMON). With
//! `--read-stack-word` it reads the word at the user stack pointer of every
//! syscall and nothing else: the floor of `trace --sites` naming a leaf's
//! caller.
//!
//!     cargo build --release --example empty_sys_enter

fn main() {
    let read_stack_word = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--read-stack-word") => true,
        Some(other) => {
            eprintln!("empty_sys_enter: unknown argument {other:?} (the only one is --read-stack-word)");
            std::process::exit(2);
        }
    };
    match vdsoctl::measure::trace::engines::bpf::EmptySysEnter::attach(read_stack_word) {
        Ok(_held) => {
            println!("attached");
            loop {
                std::thread::park();
            }
        }
        Err(e) => {
            eprintln!("empty_sys_enter: {e}");
            std::process::exit(3);
        }
    }
}
