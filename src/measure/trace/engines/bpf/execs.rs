//! What a process ran, caught at its exec (`tp_btf/sched_process_exec`):
//! the path exec was given (`bprm->filename`) and the new image's
//! arguments (`mm->arg_start .. arg_end`, read from its user memory, where
//! exec has just put them), kept in `vdsoctl_execs` by process (the last
//! exec wins). A look at /proc (`sight`) reads a process only while it
//! lives, and one that exits a few milliseconds after its exec (a wrapper
//! script's `exec`, `env`, `sh -c` on a short program) is gone before the
//! next look; this capture names it all the same. Only in vdsoctl's own
//! (the initial) pid namespace: the key is the pid as the kernel numbers
//! it there.

use super::gen::Generator;
use super::insn::{Alu, Asm, Cond, Helper, Size, FP, R0, R1, R2, R3, R4, R5, R6, R7, R8, R9};
use super::sys;
use super::Scope;
use crate::measure::trace::Exec;
use std::collections::BTreeMap;
use std::io;

/// Processes kept (an LRU map: the oldest exec goes first).
pub const MAX_EXECS: u32 = 1024;
/// Bytes of the path kept.
const PATH: usize = 256;
/// Bytes of the arguments kept.
const ARGS: usize = 1024;
/// Value: the process's start (its leader's `start_boottime`, as the count
/// rows key it), the bytes of arguments read and their whole length, the
/// path, the arguments.
const START: usize = 0;
const LEN: usize = 8;
const FULL_LEN: usize = 12;
const PATH_AT: usize = 16;
const ARGS_AT: usize = PATH_AT + PATH;
const VAL_SIZE: usize = ARGS_AT + ARGS;
/// Stack slot of the key (the tgid, 4 bytes, and the scratch map's 0).
const EXEC_KEY: i16 = -8;
const ZERO: i16 = -16;

/// `vdsoctl_execs` and the per-CPU scratch its values are built in (a
/// value is larger than the BPF stack).
#[derive(Debug)]
pub(super) struct ExecMaps {
    pub execs: sys::Map,
    pub scratch: sys::Map,
}

/// The maps' descriptors, as the generator references them.
#[derive(Debug, Clone, Copy)]
pub(super) struct ExecFds {
    pub execs: i32,
    pub scratch: i32,
}

impl ExecMaps {
    pub(super) fn create(
        map: impl Fn(sys::MapSpec<'_>) -> crate::error::Result<sys::Map>,
    ) -> crate::error::Result<Self> {
        let execs = map(sys::MapSpec {
            map_type: super::MAP_LRU_HASH,
            key_size: 4,
            value_size: VAL_SIZE as u32,
            max_entries: MAX_EXECS,
            flags: 0,
            name: "vdsoctl_execs",
        })?;
        let scratch = map(sys::MapSpec {
            map_type: super::MAP_PERCPU_ARRAY,
            key_size: 4,
            value_size: VAL_SIZE as u32,
            max_entries: 1,
            flags: 0,
            name: "vdsoctl_execbuf",
        })?;
        Ok(ExecMaps { execs, scratch })
    }

    pub(super) fn fds(&self) -> ExecFds {
        ExecFds { execs: self.execs.raw_fd(), scratch: self.scratch.raw_fd() }
    }

    /// Every exec kept, by (tgid, start).
    pub(super) fn read(&self) -> io::Result<BTreeMap<(i32, u64), Exec>> {
        let mut out = BTreeMap::new();
        let mut value = vec![0u8; VAL_SIZE];
        for k in self.execs.keys(MAX_EXECS + 1) {
            let k = k?;
            if self.execs.lookup(&k, &mut value)? {
                let tgid = u32::from_ne_bytes(k[..4].try_into().unwrap_or([0; 4])) as i32;
                if let Some((start, exec)) = decode(&value) {
                    out.insert((tgid, start), exec);
                }
            }
        }
        Ok(out)
    }
}

/// A `vdsoctl_execs` value; `None` when it holds no arguments.
fn decode(v: &[u8]) -> Option<(u64, Exec)> {
    let dw = |o: usize| v.get(o..o + 8).map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])));
    let w = |o: usize| v.get(o..o + 4).map_or(0, |b| u32::from_ne_bytes(b.try_into().unwrap_or([0; 4])));
    let len = (w(LEN) as usize).min(ARGS);
    let args = v.get(ARGS_AT..ARGS_AT + len)?;
    let (argv, cut) = crate::inspect::identity::split_cmdline(args);
    if argv.is_empty() {
        return None;
    }
    let path = v.get(PATH_AT..PATH_AT + PATH)?;
    let path = &path[..path.iter().position(|b| *b == 0).unwrap_or(PATH)];
    // Only an absolute path names the file without the process's cwd.
    let exe = path.starts_with(b"/").then(|| String::from_utf8_lossy(path).into_owned());
    Some((dw(START), Exec { exe, argv, truncated: cut || w(FULL_LEN) as usize > len }))
}

impl Generator {
    /// `tp_btf/sched_process_exec(struct task_struct *p, pid_t old_pid,
    /// struct linux_binprm *bprm)`, `p` the current task: for a traced
    /// process, its start, exec's path and the new image's arguments into
    /// `vdsoctl_execs`.
    pub fn exec(&self, fds: ExecFds) -> Result<Vec<u64>, String> {
        let l = self.layout;
        let Some(x) = l.exec else { return Err("the kernel's BTF has no sched_process_exec layout".into()) };
        let mut a = Asm::new();
        // R6: bprm.
        a.load(Size::Dw, R6, R1, 16);
        a.call(Helper::GetCurrentPidTgid).alu_imm(Alu::Rsh, R0, 32);
        a.jump_imm(Cond::Eq, R0, self.own_tgid as i32, "out").store(Size::W, FP, EXEC_KEY, R0);
        a.call(Helper::GetCurrentTaskBtf).mov(R9, R0);
        // R7: the process's start (its group leader's).
        Self::member(&mut a, Size::Dw, R8, R9, l.group_leader, 0);
        Self::member(&mut a, Size::Dw, R7, R8, l.start, 0);
        if self.scope == Scope::Trees {
            a.load(Size::W, R1, FP, EXEC_KEY);
            self.traced(&mut a);
        }
        a.store_imm(Size::W, FP, ZERO, 0)
            .load_map(R1, fds.scratch)
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, i32::from(ZERO))
            .call(Helper::MapLookupElem)
            .jump_imm(Cond::Eq, R0, 0, "out")
            .mov(R8, R0)
            .store(Size::Dw, R8, START as i16, R7);
        // The path exec was given.
        a.mov(R1, R8).alu_imm(Alu::Add, R1, PATH_AT as i32).mov_imm(R2, PATH as i32);
        Self::member(&mut a, Size::Dw, R3, R6, x.filename, 0);
        a.call(Helper::ProbeReadKernelStr);
        // The arguments: at most ARGS bytes from arg_start.
        Self::member(&mut a, Size::Dw, R4, R9, x.mm, 0).jump_imm(Cond::Eq, R4, 0, "out");
        Self::member(&mut a, Size::Dw, R5, R4, x.arg_start, 0);
        Self::member(&mut a, Size::Dw, R2, R4, x.arg_end, 0);
        a.alu_reg(Alu::Sub, R2, R5).store(Size::W, R8, FULL_LEN as i16, R2);
        a.jump_imm(Cond::Gt, R2, ARGS as i32, "clamp").goto("sized");
        a.label("clamp").mov_imm(R2, ARGS as i32);
        a.label("sized").store(Size::W, R8, LEN as i16, R2);
        a.mov(R1, R8).alu_imm(Alu::Add, R1, ARGS_AT as i32).mov(R3, R5).call(Helper::ProbeReadUser);
        a.jump_imm(Cond::Ne, R0, 0, "out");
        a.load_map(R1, fds.execs)
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, i32::from(EXEC_KEY))
            .mov(R3, R8)
            .mov_imm(R4, 0)
            .call(Helper::MapUpdateElem);
        a.label("out").mov_imm(R0, 0).exit();
        a.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_decode_to_the_exec_they_hold() {
        let mut v = vec![0u8; VAL_SIZE];
        v[START..START + 8].copy_from_slice(&77u64.to_ne_bytes());
        let args = b"/lib/ld.so\0--library-path\0/x\0./prog\0raw\0";
        v[LEN..LEN + 4].copy_from_slice(&(args.len() as u32).to_ne_bytes());
        v[FULL_LEN..FULL_LEN + 4].copy_from_slice(&(args.len() as u32).to_ne_bytes());
        v[PATH_AT..PATH_AT + 10].copy_from_slice(b"/lib/ld.so");
        v[ARGS_AT..ARGS_AT + args.len()].copy_from_slice(args);
        let (start, exec) = decode(&v).unwrap();
        assert_eq!(start, 77);
        assert_eq!(exec.exe.as_deref(), Some("/lib/ld.so"));
        assert_eq!(exec.argv, ["/lib/ld.so", "--library-path", "/x", "./prog", "raw"]);
        assert!(!exec.truncated);
        // A relative path names no file; arguments cut at ARGS say so.
        v[PATH_AT..PATH_AT + 10].copy_from_slice(b"./ld.so\0\0\0");
        v[FULL_LEN..FULL_LEN + 4].copy_from_slice(&5000u32.to_ne_bytes());
        let (_, exec) = decode(&v).unwrap();
        assert_eq!((exec.exe, exec.truncated), (None, true));
        // No arguments read: nothing.
        v[LEN..LEN + 4].copy_from_slice(&0u32.to_ne_bytes());
        assert!(decode(&v).is_none());
        assert!(decode(&[0u8; 3]).is_none(), "short values never panic");
    }
}
