//! `check -p`: what the target process's executable means for its clock reads.

use crate::inspect::exe::{self, Launch};
use crate::inspect::host::VdsoFacts;
use crate::inspect::Process;
use crate::model::binary::{process_binary, BinaryFacts, HostFacts, ProcessExe, WarnKind};
use crate::model::check::Check;
use crate::model::random::ProcessRandom;
use crate::model::ProcessName;
use crate::render::binary::process_binary_row;
use crate::render::random::process_random_row;

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
/// qemu-user, Go by its buildinfo with or without cgo. `vdso`: what was
/// read of its vDSO (the image tells whether it offers getrandom).
pub fn process_exe_check(process: &Process, vdso: &VdsoFacts, host: &HostFacts) -> ExeCheck {
    let rt = match exe::process_runtime(process) {
        Ok(r) => r,
        Err(e) => {
            return ExeCheck {
                check: process_binary_row(&ProcessExe::Unreadable { error: e.to_string() }),
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
    if let Launch::Emulator { tool, program } = &rt.launch {
        return ExeCheck {
            check: process_binary_row(&ProcessExe::UnderEmulator {
                who,
                program: program.as_deref(),
                tool,
                path: &path,
            }),
            warn_kind: WarnKind::None,
            emulator: Some(tool.clone()),
            facts,
            random: None,
        };
    }
    let loader = match &rt.launch {
        Launch::Loader { loader, .. } => Some(loader.display().to_string()),
        _ => None,
    };
    // The row's words are render's: the model judges, cmd words the row.
    let exe = process_binary(who, loader.as_deref(), info, host);
    let (check, kind) = (process_binary_row(&exe), exe.warn_kind());
    let libc_path = rt.mapped_libc.as_ref().map(|(_, _, p)| p.display().to_string());
    let kernel = crate::inspect::kernel::release().and_then(|r| crate::inspect::kernel::parse_version(&r));
    let random =
        ProcessRandom::of(info, libc_path, vdso.image.as_ref().ok(), kernel, process.droppable_mappings().ok());
    let random = process_random_row(&random);
    ExeCheck { check, warn_kind: kind, emulator: None, facts, random: Some(random) }
}
