//! `check -p`: what the target process's executable means for its clock reads.

use crate::arch;
use crate::inspect::exe::{self, Launch, Linkage};
use crate::inspect::Process;
use crate::model::binary::{binary_verdict, BinaryFacts, HostFacts, WarnKind};
use crate::model::check::Check;
use crate::model::random::{process_random_check, ProcessRandom};
use crate::model::ProcessName;
use crate::model::Status;

/// The `process_binary` row and what stands behind it.
pub struct ExeCheck {
    pub check: Check,
    /// Whether a WARN only says the path is unproven (the observation may clear it).
    pub warn_kind: WarnKind,
    /// The emulator or instrumenter the program runs under.
    pub emulator: Option<String>,
    /// The executable's facts (`binary` in JSON); `None` when it cannot be read.
    pub facts: Option<BinaryFacts>,
    /// The `process_random` row: where its random bytes come from.
    pub random: Option<Check>,
}

/// What a target process's runtime means for its clock reads: the program
/// ld.so runs rather than ld.so, the tool for a program under valgrind or
/// qemu-user, Go by its buildinfo with or without cgo.
pub fn process_exe_check(process: &Process, host: &HostFacts) -> ExeCheck {
    let name = "process_binary";
    let rt = match exe::process_runtime(process) {
        Ok(r) => r,
        Err(e) => {
            return ExeCheck {
                check: Check::new(name, Status::Skip, format!("cannot read the executable: {e}"), None),
                warn_kind: WarnKind::None,
                emulator: None,
                facts: None,
                random: None,
            }
        }
    };
    let info = &rt.info;
    let facts = Some(BinaryFacts::of(info));
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
        return ExeCheck {
            check: Check::new(
                name,
                Status::Fail,
                format!(
                    "{} runs{prog} under {tool} ({path}): the tool maps no [vdso] for the program and serves each clock read itself, as a syscall",
                    who.text()
                ),
                Some("expected under an emulator or instrumenter; audit the program run natively"),
            ),
            warn_kind: WarnKind::None,
            emulator: Some(tool.clone()),
            facts,
            random: None,
        };
    }
    let (status, verdict, hint, kind) = binary_verdict(info, host);
    let launched = match &rt.launch {
        Launch::Loader { loader, .. } => format!(" (started as `{} PROG`)", loader.display()),
        _ => String::new(),
    };
    let detail = format!("{}{launched}: {class} {arch_name}, {linkage}; {verdict}", who.with_exe());
    // The hint names this process, not a placeholder.
    let hint = hint.map(|h| crate::model::binary::hint_for_process(h, process.pid()));
    let libc_path = rt.mapped_libc.as_ref().map(|(_, _, p)| p.display().to_string());
    let image = process.vdso_image().ok();
    let kernel = crate::inspect::kernel::release().and_then(|r| crate::inspect::kernel::parse_version(&r));
    let random = ProcessRandom::of(info, libc_path, image.as_ref(), kernel, process.droppable_mappings().ok());
    let random = process_random_check(&random);
    ExeCheck {
        check: Check::new(name, status, detail, hint.as_deref()),
        warn_kind: kind,
        emulator: None,
        facts,
        random: Some(random),
    }
}
