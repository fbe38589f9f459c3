//! Attach an empty BPF program to `sys_enter` and hold it until killed:
//! scripts/bench-trace.sh's floor for the tax a `sys_enter` program puts on
//! every syscall of the host (root, or CAP_BPF + CAP_PERFMON).
//!
//!     cargo build --release --example empty_sys_enter

fn main() {
    match vdsoctl::measure::bpf::EmptySysEnter::attach() {
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
