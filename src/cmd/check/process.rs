//! `check -p`: what the target process's executable means for its clock reads.

use crate::arch;
use crate::inspect::exe::{self, Launch, Linkage};
use crate::inspect::Process;
use crate::model::binary::{binary_verdict, HostFacts, WarnKind};
use crate::model::check::Check;
use crate::model::ProcessName;
use crate::model::Status;

/// What a target process's runtime means for its clock reads: the program
/// ld.so runs rather than ld.so, the tool for a program under valgrind or
/// qemu-user, Go by its buildinfo with or without cgo.
pub fn process_exe_check(process: &Process, host: &HostFacts) -> (Check, WarnKind, Option<String>) {
    let name = "process_binary";
    let rt = match exe::process_runtime(process) {
        Ok(r) => r,
        Err(e) => {
            return (
                Check::new(name, Status::Skip, format!("cannot read the executable: {e}"), None),
                WarnKind::None,
                None,
            )
        }
    };
    let info = &rt.info;
    let path = rt.path.as_ref().map_or_else(|| "?".to_string(), |p| p.display().to_string());
    // Named as the process has it; the executable is said as such.
    let argv0 = process.argv0();
    let exe = rt.path.as_ref().map(|p| p.display().to_string());
    let who = ProcessName { pid: process.pid(), comm: process.comm(), argv0: argv0.as_deref(), exe: exe.as_deref() };
    let class = if info.is_64 { "64-bit" } else { "32-bit" };
    let arch_name = arch::machine_name(info.machine);
    let linkage = match info.linkage() {
        Linkage::Dynamic => format!("dynamic ({})", info.interp.as_deref().unwrap_or("")),
        Linkage::Static => "statically linked".to_string(),
        Linkage::StaticPie => "statically linked (static-pie)".to_string(),
    };
    if let Launch::Emulator { tool, program } = &rt.launch {
        let prog = program.as_deref().map_or_else(String::new, |p| format!(" {p}"));
        return (
            Check::new(
                name,
                Status::Fail,
                format!(
                    "{} runs{prog} under {tool} ({path}): the tool maps no [vdso] for the program and serves each clock read itself, as a syscall",
                    who.text()
                ),
                Some("expected under an emulator or instrumenter; audit the program run natively"),
            ),
            WarnKind::None,
            Some(tool.clone()),
        );
    }
    let (status, verdict, hint, kind) = binary_verdict(info, host);
    let launched = match &rt.launch {
        Launch::Loader { loader, .. } => format!(" (started as `{} PROG`)", loader.display()),
        _ => String::new(),
    };
    let detail = format!("{}{launched}: {class} {arch_name}, {linkage}; {verdict}", who.with_exe());
    // The hint names this process, not a placeholder.
    let hint = hint.map(|h| h.replace("check -p PID", &format!("check -p {}", process.pid())));
    (Check::new(name, status, detail, hint.as_deref()), kind, None)
}
