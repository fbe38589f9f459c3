//! The programs, generated for one kernel layout, scope and map set. Every
//! key and value field is stored at its [`layout`](super::layout) slot, and
//! every load from a kernel structure goes through [`Generator::member`],
//! which checks its width against the member's BTF size.

use super::insn::{Alu, Asm, Cond, Helper, Size, FP, R0, R1, R2, R3, R4, R5, R6, R7, R8, R9};
use super::layout::{self, key, pkey, proc_key, proc_val, pval, skey, unread, Layout, Part, Slot};
use super::{Scope, REFUSED, SITES_REFUSED, UNFOLLOWED};
use crate::arch::{self, Abi, FnKind};
use crate::inspect::btf::Field;
use crate::inspect::process::PidNamespace;
use crate::measure::trace::{RandomCall, GRND_NONBLOCK, GRND_SERVED, STARTUP_KEY_MAX};

/// `BPF_NOEXIST`: insert only.
pub(super) const NOEXIST: i32 = 1;

/// Stack slots (offsets from the frame pointer) of the `sys_enter` and
/// `vsyscall` programs.
pub(super) const KEY: i16 = -24;
const VALUE: i16 = -32;
const SMALL: i16 = -40;
pub(super) const PKEY: i16 = -56;
const PVAL: i16 = -88;
/// `struct bpf_pidns_info` (pid, tgid) in a pid namespace.
const NSINFO: i16 = -96;
/// The call-site key (`--sites`): the row key copied, then ip and return
/// address; below `--stacks`' slots ([`super::stacks`]), as both may run.
pub(super) const SITE_KEY: i16 = -168;
/// `--sites`, native tasks: the stack-word filter's key and bit.
const SITE_WORDS: i16 = -184;
/// `--sites`, compat tasks: the nine words at the stack pointer (36 bytes,
/// below `--stacks`' slots: -328..-292).
const SITE_COMPAT_WORDS: i16 = -328;
/// A 4-byte slot off the 8-byte grid (between `SITE_COMPAT_WORDS` and
/// `stacks::CAPTURED_FLAG`): a value stored and loaded back there is one
/// the verifier no longer knows ([`Generator::forget_word`]).
const FORGET: i16 = -292;
/// Stack slots of the `fork` program: the traced-set key and value, and the
/// parent's key for its lookup.
const FORK_KEY: i16 = -32;
const FORK_PARENT: i16 = -28;
const FORK_VAL: i16 = -24;
/// The fork program's scratch for reads in a pid namespace.
const FORK_NS: i16 = -40;

/// Static clock ids a row keeps exactly (`Clock::of_id`, done in the kernel).
const STATIC_CLOCKS: i32 = crate::measure::trace::STATIC_CLOCKS as i32;

/// The maps' descriptors, as `ld_imm64` references.
#[derive(Debug, Clone, Copy)]
pub(super) struct MapFds {
    pub counts: i32,
    pub procs: i32,
    pub totals: i32,
    pub stats: i32,
    /// The `--cgroup` directories (a `BPF_MAP_TYPE_CGROUP_ARRAY`), when given.
    pub cgroups: Option<i32>,
}

/// Writes the programs for one layout, scope and map set.
pub(super) struct Generator {
    pub layout: Layout,
    pub maps: MapFds,
    pub scope: Scope,
    pub per_thread: bool,
    pub host: Abi,
    pub own_tgid: u32,
    /// Divides a start time in ns into /proc's clock ticks.
    pub ns_per_tick: i32,
    /// vdsoctl's pid namespace when it is not the initial one: pids are
    /// counted and keyed as it sees them, and tasks it cannot see are not
    /// counted.
    pub pidns: Option<PidNamespace>,
    /// How many cgroups `maps.cgroups` holds: a call is counted only from
    /// a task in one of them or below (none: every task).
    pub cgroup_count: u32,
    /// `--sites`: the call-site map, which holds the rows' counts then,
    /// and the stack-word filter.
    pub sites: Option<SiteFds>,
    /// `--stacks`: count each call's user stack too ([`super::stacks`]).
    pub stacks: Option<super::stacks::StackFds>,
}

/// `--sites`' maps, as the generator references them.
#[derive(Debug, Clone, Copy)]
pub struct SiteFds {
    /// The call-site rows (`layout::skey`).
    pub map: i32,
    /// The stack-word filter (`layout::unread`).
    pub unread: i32,
    /// Each site address's mapping, captured at the site's first call
    /// ([`super::files`]); `None`: not captured.
    pub files: Option<i32>,
}

/// `*(size *)(base + at + slot) = src`.
fn put(a: &mut Asm, base: i16, slot: Slot, src: super::insn::Reg) {
    a.store(slot.size, FP, base + slot.off, src);
}

impl Generator {
    /// `dst = *(size *)(src + member + part)`: refused (at `finish`) when
    /// `size` is not the member's whole width, or for an array, not an
    /// aligned part of it — a load of 4 bytes from an 8-byte pointer would
    /// verify and read half of it.
    pub(super) fn member(
        a: &mut Asm,
        size: Size,
        dst: super::insn::Reg,
        src: super::insn::Reg,
        m: Field,
        part: u32,
    ) -> &mut Asm {
        let w = size.bytes();
        let fits = if m.array { part % w == 0 && part + w <= m.size } else { part == 0 && w == m.size };
        match i16::try_from(m.offset + part) {
            Ok(off) if fits => a.load(size, dst, src, off),
            _ => a.fail(format!(
                "a {w}-byte load at +{part} of a {}-byte member (offset {}) does not fit it",
                m.size, m.offset
            )),
        }
    }

    /// `dst = *(src + part)`, the load as wide as the member (an array's
    /// element: 8 bytes); a member of another width is refused.
    pub(super) fn part(a: &mut Asm, dst: super::insn::Reg, src: super::insn::Reg, p: Part) -> &mut Asm {
        match p.width() {
            Some(size) => Self::member(a, size, dst, src, p.member, p.at),
            None => a.fail(format!("no load is {} bytes wide (member at offset {})", p.member.size, p.member.offset)),
        }
    }

    /// `lock *(u64 *)R0 += 1` (`BPF_ATOMIC | BPF_ADD`). A per-CPU value is
    /// not enough to make a load, add and store safe: where the programs
    /// run preemptible (migrate_disable only: 7.x's syscall tracepoints,
    /// fentry trampolines), two programs sharing the map (`sys_enter` and
    /// `vsyscall`, the fentry programs of two functions) can interleave on
    /// one CPU, and a plain read-modify-write loses one of the two adds.
    fn bump(a: &mut Asm) {
        a.mov_imm(R1, 1).atomic_add(R0, 0, R1);
    }

    /// Bump the per-CPU counter the key at stack slot `key` names in `map`,
    /// or insert it at 1 (from stack slot `one`) with `BPF_NOEXIST`, then
    /// go to `done`; when the insert fails (another CPU inserted the same
    /// key meanwhile, EEXIST, or the map is full) look again, and go to
    /// `refused` on a second miss. `labels`: insert, refused, done.
    pub(super) fn bump_or_insert(a: &mut Asm, map: i32, (key, one): (i16, i16), [insert, refused, done]: [&str; 3]) {
        let lookup = |a: &mut Asm, missing: &str| {
            a.load_map(R1, map).mov(R2, FP).alu_imm(Alu::Add, R2, i32::from(key)).call(Helper::MapLookupElem).jump_imm(
                Cond::Eq,
                R0,
                0,
                missing,
            );
            Self::bump(a);
            a.goto(done);
        };
        lookup(a, insert);
        a.label(insert)
            .store_imm(Size::Dw, FP, one, 1)
            .load_map(R1, map)
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, i32::from(key))
            .mov(R3, FP)
            .alu_imm(Alu::Add, R3, i32::from(one))
            .mov_imm(R4, NOEXIST)
            .call(Helper::MapUpdateElem)
            .jump_imm(Cond::Eq, R0, 0, done);
        lookup(a, refused);
    }

    /// `stats[slot] += 1`.
    pub(super) fn count_stat(&self, a: &mut Asm, slot: u32) {
        a.store_imm(Size::W, FP, SMALL, slot as i32)
            .load_map(R1, self.maps.stats)
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, i32::from(SMALL))
            .call(Helper::MapLookupElem)
            .jump_imm(Cond::Eq, R0, 0, "out");
        Self::bump(a);
    }

    /// Zero the key on the stack.
    pub(super) fn zero_key(a: &mut Asm) {
        for i in 0..(key::SIZE as i16 / 8) {
            a.store_imm(Size::Dw, FP, KEY + 8 * i, 0);
        }
    }

    /// The row lookup-or-insert: bump the row `KEY` names and leave, or go
    /// to `refused` when the map holds no such row and takes no new one.
    fn count_row(&self, a: &mut Asm, tag: &str, refused: &str) {
        let insert = format!("{tag}_insert");
        Self::bump_or_insert(a, self.maps.counts, (KEY, VALUE), [&insert, refused, "out"]);
    }

    /// The traced-set check of `count_tail`: leave unless the process in R1
    /// (start time in R7) is in the set, and is the one that was added.
    pub(super) fn traced(&self, a: &mut Asm) {
        put(a, SMALL, proc_key::TGID, R1);
        a.load_map(R1, self.maps.procs)
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, i32::from(SMALL))
            .call(Helper::MapLookupElem)
            .jump_imm(Cond::Eq, R0, 0, "out");
        // The traced process, not one that took its pid after it exited.
        a.load(proc_val::START_TICKS.size, R2, R0, proc_val::START_TICKS.off)
            .jump_imm(Cond::Eq, R2, 0, "traced")
            .mov(R3, R7)
            .alu_imm(Alu::Div, R3, self.ns_per_tick)
            .jump_reg(Cond::Ne, R3, R2, "out")
            .label("traced");
    }

    /// With `--cgroup`: leave unless the current task is in one of the
    /// cgroups or below (`bpf_current_task_under_cgroup`, one call each).
    fn cgroup_filter(&self, a: &mut Asm) {
        let Some(map) = self.maps.cgroups.filter(|_| self.cgroup_count > 0) else { return };
        for i in 0..self.cgroup_count {
            a.load_map(R1, map).mov_imm(R2, i as i32).call(Helper::CurrentTaskUnderCgroup).jump_imm(
                Cond::Eq,
                R0,
                1,
                "in_cgroup",
            );
        }
        a.goto("out").label("in_cgroup");
    }

    /// R0 = the current task's tgid << 32 | pid, as vdsoctl's pid
    /// namespace sees them; in a namespace, leave when it cannot see the
    /// task (one outside it, or in a namespace nested in it).
    fn current_ids(&self, a: &mut Asm) {
        let Some(ns) = self.pidns else {
            a.call(Helper::GetCurrentPidTgid);
            return;
        };
        Self::ns_ids(a, ns, NSINFO);
        // bpf_pidns_info { u32 pid; u32 tgid; } into get_current_pid_tgid's
        // tgid << 32 | pid, word by word (one u64 load is that only on a
        // little-endian host).
        a.load(Size::W, R0, FP, NSINFO + 4).alu_imm(Alu::Lsh, R0, 32);
        a.load(Size::W, R1, FP, NSINFO).alu_reg(Alu::Or, R0, R1);
    }

    /// `bpf_get_ns_current_pid_tgid(dev, ino, fp + at, 8)`, leaving unless it
    /// returns 0.
    fn ns_ids(a: &mut Asm, ns: PidNamespace, at: i16) {
        a.load_imm64(R1, ns.dev)
            .load_imm64(R2, ns.ino)
            .mov(R3, FP)
            .alu_imm(Alu::Add, R3, i32::from(at))
            .mov_imm(R4, 8)
            .call(Helper::GetNsCurrentPidTgid)
            .jump_imm(Cond::Ne, R0, 0, "out");
    }

    /// The fork program's ids, with R7 the child and R8 the parent task and
    /// R2 the child's global tgid: R2 = the child's tgid, R3 = the parent's, as vdsoctl's pid namespace
    /// sees them. In a namespace the parent is the current task (the
    /// helper's), and the child's pid is its `thread_pid->numbers[level].nr`
    /// at the parent's level, read with `bpf_probe_read_kernel`.
    fn fork_ids(&self, a: &mut Asm) {
        let l = self.layout;
        let Some(ns) = self.pidns else {
            Self::member(a, Size::W, R3, R8, l.tgid, 0);
            return;
        };
        let Some(p) = l.pid_numbers else {
            a.fail(
                "the kernel's BTF has no task_struct.thread_pid, pid.numbers or upid: no pids in a namespace".into(),
            );
            return;
        };
        Self::ns_ids(a, ns, FORK_NS);
        a.load(Size::W, R6, FP, FORK_NS + 4);
        // R9: the offset of numbers[level].nr in a struct pid.
        Self::member(a, Size::Dw, R1, R8, p.thread_pid, 0);
        Self::member(a, Size::W, R9, R1, p.level, 0);
        a.alu_imm(Alu::Mul, R9, p.upid_size as i32).alu_imm(Alu::Add, R9, (p.numbers + p.nr.offset) as i32);
        let read = |a: &mut Asm, size: i32| {
            a.mov(R1, FP)
                .alu_imm(Alu::Add, R1, i32::from(FORK_NS))
                .mov_imm(R2, size)
                .call(Helper::ProbeReadKernel)
                .jump_imm(Cond::Ne, R0, 0, "out");
        };
        a.mov(R3, R7).alu_imm(Alu::Add, R3, p.thread_pid.offset as i32);
        read(a, 8);
        a.load(Size::Dw, R3, FP, FORK_NS).jump_imm(Cond::Eq, R3, 0, "out").alu_reg(Alu::Add, R3, R9);
        read(a, p.nr.size as i32);
        a.load(Size::W, R2, FP, FORK_NS).mov(R3, R6);
    }

    /// The shared tail: with R4 holding the key word (and the clock id
    /// stored), R9 the current task: fill pid and start time, check the
    /// traced set, count the call in its process's total (and keep its
    /// name there), then in its row.
    pub(super) fn count_tail(&self, a: &mut Asm) {
        let l = self.layout;
        self.forget_word(a);
        put(a, KEY, key::WORD, R4);
        self.cgroup_filter(a);
        self.current_ids(a);
        a.mov(R1, R0).alu_imm(Alu::Rsh, R1, 32);
        a.jump_imm(Cond::Eq, R1, self.own_tgid as i32, "out");
        put(a, KEY, key::TGID, R1);
        put(a, PKEY, pkey::TGID, R1);
        if self.per_thread {
            put(a, KEY, key::TID, R0);
        }
        // R8: the group leader; R7: its start time (the process's).
        Self::member(a, Size::Dw, R8, R9, l.group_leader, 0);
        Self::member(a, Size::Dw, R7, R8, l.start, 0);
        put(a, KEY, key::START, R7);
        a.store_imm(pkey::PAD.size, FP, PKEY + pkey::PAD.off, 0);
        put(a, PKEY, pkey::START, R7);
        // The process's entry: find or make it.
        let proc_lookup = |a: &mut Asm| {
            a.load_map(R1, self.maps.totals)
                .mov(R2, FP)
                .alu_imm(Alu::Add, R2, i32::from(PKEY))
                .call(Helper::MapLookupElem);
        };
        proc_lookup(a);
        a.jump_imm(Cond::Ne, R0, 0, "have_proc");
        // An entry is made only for a process the traced-set check let
        // through, keyed by its start too, and both go at once (`forget`):
        // so a process with an entry is traced, and only one without is
        // checked — one hash lookup a call fewer (issue 43: the cost).
        if self.scope == Scope::Trees {
            a.load(pkey::TGID.size, R1, FP, PKEY + pkey::TGID.off);
            self.traced(a);
        }
        for i in 0..(pval::SIZE as i16 / 8) {
            a.store_imm(Size::Dw, FP, PVAL + 8 * i, 0);
        }
        a.load_map(R1, self.maps.totals)
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, i32::from(PKEY))
            .mov(R3, FP)
            .alu_imm(Alu::Add, R3, i32::from(PVAL))
            .mov_imm(R4, NOEXIST)
            .call(Helper::MapUpdateElem);
        proc_lookup(a);
        a.jump_imm(Cond::Ne, R0, 0, "have_proc");
        // No entry (the traced set's map is full): the row alone, and a
        // call that gets neither is lost.
        self.count_row(a, "bare", "lost");
        a.label("lost");
        self.count_stat(a, REFUSED);
        a.goto("out");
        // R6: the entry. Total += 1, the name as of now.
        a.label("have_proc").mov(R6, R0).mov_imm(R1, 1).atomic_add(R6, pval::CALLS.off, R1);
        for (i, slot) in pval::COMM.iter().enumerate() {
            Self::member(a, slot.size, R2, R8, l.comm, slot.size.bytes() * i as u32);
            a.store(slot.size, R6, slot.off, R2);
        }
        self.count_stack(a);
        self.count_site(a);
        self.count_row(a, "row", "dropped");
        // The row map is full: the call stays in the total, marked as
        // having no row.
        a.label("dropped").mov_imm(R1, 1).atomic_add(R6, pval::DROPPED.off, R1);
        a.label("out").mov_imm(R0, 0).exit();
        self.vma_callback(a);
        self.frames_callback(a);
    }

    /// `--sites`, at `sys_enter`'s tail (R8 the registers, R4 the key
    /// word, kept): the user instruction pointer, and the word at the user
    /// stack pointer read with `bpf_probe_read_user` (8 bytes; for a
    /// compat task the words three and eight up instead, see below); a page not present
    /// reads as 0 (no fault is taken here). A native call skips the read
    /// (the word stays 0) when the filter's bit for its ip is set: user
    /// space sets it for sites whose word is no code (`measure::trace::sites`) —
    /// the read is the dearest part of a site.
    pub(super) fn capture_site(&self, a: &mut Asm) {
        let Some(fds) = self.sites else { return };
        let Some((ip, sp)) = self.layout.site else { return self.no_site(a) };
        self.forget_word(a);
        put(a, KEY, key::WORD, R4);
        Self::member(a, Size::Dw, R1, R8, ip, 0);
        put(a, SITE_KEY, skey::IP, R1);
        a.store_imm(Size::Dw, FP, SITE_KEY + skey::RET.off, 0);
        a.alu_imm(Alu::And, R4, 0xff).jump_imm(Cond::Ne, R4, i32::from(layout::ABI_COMPAT), "site_native");
        // A compat task: three words up (high half), where the vDSO's
        // __kernel_vsyscall, which pushed three registers, returns to — its
        // caller; and eight up (low half), past the four registers glibc's
        // syscall() pushed before it called in: where that returns to
        // (`measure::trace::sites::Site::words`). One read of 36 bytes.
        Self::member(a, Size::Dw, R3, R8, sp, 0);
        let words = SITE_COMPAT_WORDS;
        a.mov(R1, FP).alu_imm(Alu::Add, R1, i32::from(words)).mov_imm(R2, 36).call(Helper::ProbeReadUser);
        let ret = SITE_KEY + skey::RET.off;
        a.load(Size::W, R1, FP, words + 32).store(Size::W, FP, ret, R1);
        a.load(Size::W, R1, FP, words + 12).store(Size::W, FP, ret + 4, R1);
        a.goto("site_read");
        // The filter's word for this ip (an array lookup: inlined by the
        // verifier), then its bit (layout::unread::bit).
        a.label("site_native").alu_imm(Alu::Mul, R1, unread::MUL).alu_imm(Alu::Rsh, R1, unread::SHIFT);
        a.mov(R2, R1).alu_imm(Alu::Rsh, R2, 6).store(Size::W, FP, SITE_WORDS, R2);
        a.alu_imm(Alu::And, R1, 63).store(Size::Dw, FP, SITE_WORDS + 8, R1);
        a.load_map(R1, fds.unread).mov(R2, FP).alu_imm(Alu::Add, R2, i32::from(SITE_WORDS)).call(Helper::MapLookupElem);
        a.jump_imm(Cond::Eq, R0, 0, "site_word");
        a.load(Size::Dw, R1, R0, 0).load(Size::Dw, R2, FP, SITE_WORDS + 8).alu_reg(Alu::Rsh, R1, R2);
        a.alu_imm(Alu::And, R1, 1).jump_imm(Cond::Ne, R1, 0, "site_read");
        a.label("site_word");
        Self::read_stack_word(a, R8, sp, ret);
        a.label("site_read").load(key::WORD.size, R4, FP, KEY + key::WORD.off);
    }

    /// With `--sites` or `--stacks`: R4, the key word, stored and loaded
    /// back through [`FORGET`] (a 4-byte slot off the 8-byte grid, which
    /// the verifier keeps as bytes, not as the value): the same word, but
    /// one the verifier does not know. Every function's path reaches the
    /// tail with its own constant, and the tail tests the word (the ABI):
    /// the verifier would walk the tail, its captures and their
    /// `bpf_find_vma` callbacks once per function; now once (issue 43: the
    /// start of `--sites` and `--stacks`, doc/BENCHMARKS.md). Two
    /// instructions a counted call; the default programs go without.
    fn forget_word(&self, a: &mut Asm) {
        if self.sites.is_some() || self.stacks.is_some() {
            a.store(Size::W, FP, FORGET, R4).load(Size::W, R4, FP, FORGET);
        }
    }

    /// `*(fp + to) = the word at the user stack pointer` (member `sp` of
    /// the registers in `regs`), read with `bpf_probe_read_user`: the read
    /// `--sites` makes, and the bench's floor program
    /// (`super::EmptySysEnter`) makes alone. Clobbers R0–R5.
    pub(super) fn read_stack_word(a: &mut Asm, regs: super::insn::Reg, sp: Field, to: i16) {
        Self::member(a, Size::Dw, R3, regs, sp, 0);
        a.mov(R1, FP).alu_imm(Alu::Add, R1, i32::from(to)).mov_imm(R2, 8);
        a.call(Helper::ProbeReadUser);
    }

    /// `--sites` in a program with no user registers (`[vsyscall]`): no site.
    fn no_site(&self, a: &mut Asm) {
        if self.sites.is_some() {
            a.store_imm(Size::Dw, FP, SITE_KEY + skey::IP.off, 0).store_imm(Size::Dw, FP, SITE_KEY + skey::RET.off, 0);
        }
    }

    /// `--sites`, once the row key is whole: count the call in its site's
    /// row (the row key, ip and stack word) instead of its count row — user
    /// space sums a row's sites (one map update a call, as without
    /// `--sites`). A site the full map refuses is counted in
    /// `stats[SITES_REFUSED]`, and in its count row, which follows.
    fn count_site(&self, a: &mut Asm) {
        let Some(fds) = self.sites else { return };
        for i in 0..(key::SIZE as i16 / 8) {
            a.load(Size::Dw, R1, FP, KEY + 8 * i).store(Size::Dw, FP, SITE_KEY + 8 * i, R1);
        }
        if fds.files.is_some() && self.layout.vma.is_some() {
            // A site seen before: bumped, as without the capture.
            a.load_map(R1, fds.map).mov(R2, FP).alu_imm(Alu::Add, R2, i32::from(SITE_KEY));
            a.call(Helper::MapLookupElem).jump_imm(Cond::Eq, R0, 0, "site_new");
            Self::bump(a);
            a.goto("out").label("site_new");
            // A stack's first call captured the site's ip and word already
            // (its first frame, the word at sp). The flag is a constant the
            // verifier follows: it never walks both captures on one path
            // (16 s to load under -a when it did).
            if self.stacks.is_some_and(|s| s.files.is_some()) {
                a.load(Size::W, R1, FP, super::stacks::CAPTURED_FLAG).jump_imm(Cond::Ne, R1, 0, "site_captured");
            }
            self.capture_files(a);
            a.label("site_captured");
        }
        Self::bump_or_insert(a, fds.map, (SITE_KEY, VALUE), ["site_insert", "site_refused", "out"]);
        a.label("site_refused");
        self.count_stat(a, SITES_REFUSED);
    }

    /// `tp_btf/sys_enter(struct pt_regs *regs, long id)`.
    pub fn sys_enter(&self) -> Result<Vec<u64>, String> {
        let l = self.layout;
        let native = self.host.vdso_syscalls();
        let compat = self.host.compat().map_or(&[][..], Abi::vdso_syscalls);
        let mut a = Asm::new();
        a.regs_at_ctx = true;
        self.keep_ctx(&mut a);
        a.mov(R6, R1).load(Size::Dw, R7, R6, 8);
        // Every other syscall leaves after these compares: the tax on them.
        let mut all: Vec<i64> = native.iter().chain(compat).map(|(_, n)| *n).collect();
        all.sort_unstable();
        all.dedup();
        // `futex` is hot: a call without FUTEX_ROBUST_UNLOCK in its op
        // leaves here too, unless its number is another function's in the
        // other ABI (then the dispatch below decides).
        let mut prechecked: Vec<i64> = Vec::new();
        for (fs, other, [op, _]) in [(native, compat, l.args12_native), (compat, native, l.args12_compat)] {
            for (_, n) in fs.iter().filter(|(f, _)| f.futex_op().is_some()) {
                if prechecked.contains(n) || other.iter().any(|(_, m)| m == n) {
                    continue;
                }
                prechecked.push(*n);
                let skip = format!("pre{n}");
                a.jump_imm(Cond::Ne, R7, *n as i32, &skip).load(Size::Dw, R8, R6, 0);
                Self::part(&mut a, R2, R8, op).alu_imm(Alu::And, R2, arch::FUTEX_ROBUST_UNLOCK as i32);
                a.jump_imm(Cond::Ne, R2, 0, "clock").mov_imm(R0, 0).exit();
                a.label(&skip);
            }
        }
        for n in all.iter().filter(|n| !prechecked.contains(n)) {
            a.jump_imm(Cond::Eq, R7, *n as i32, "clock");
        }
        a.mov_imm(R0, 0).exit();
        a.label("clock").call(Helper::GetCurrentTaskBtf).mov(R9, R0);
        a.load(Size::Dw, R8, R6, 0);
        Self::zero_key(&mut a);
        // The ABI: the task's compat mark (x86_64 TS_COMPAT, arm64 _TIF_32BIT).
        Self::part(&mut a, R2, R9, l.compat_flags).alu_imm(Alu::And, R2, l.compat_mask);
        a.jump_imm(Cond::Ne, R2, 0, "compat");
        Self::part(&mut a, R3, R8, l.arg0_native);
        self.dispatch(&mut a, native, false);
        a.label("compat");
        Self::part(&mut a, R3, R8, l.arg0_compat);
        self.dispatch(&mut a, compat, true);
        let random = |fs: &[(arch::VdsoFn, i64)]| fs.iter().any(|(f, _)| matches!(f.kind(), FnKind::Random));
        if random(native) {
            a.label("random_native");
            self.random_key(&mut a, false, "tail");
        }
        if random(compat) {
            a.label("random_compat");
            self.random_key(&mut a, true, "tail");
        }
        a.label("have");
        Self::clock_key(&mut a);
        self.capture_site(&mut a);
        self.count_tail(&mut a);
        a.finish()
    }

    /// With R7 the syscall number (R8 the registers, R3 the first
    /// argument): R4 the key word of the function it is, then on to its
    /// kind's label; a number of none, or a `futex` call that is no
    /// robust unlock's fallback, to `out`. The functions that share a
    /// number (the robust-futex unlocks, `futex`) are told apart by their
    /// op, the second argument ([`arch::VdsoFn::futex_op`]).
    fn dispatch(&self, a: &mut Asm, fs: &[(arch::VdsoFn, i64)], compat: bool) {
        let (abi, tag) = if compat { (layout::ABI_COMPAT, "c") } else { (layout::ABI_NATIVE, "n") };
        let mut futex: Vec<i64> = Vec::new();
        for (f, n) in fs {
            let to = match f.kind() {
                FnKind::Random if compat => "random_compat",
                FnKind::Random => "random_native",
                FnKind::Clock | FnKind::Cpu => "have",
                FnKind::Futex => {
                    if !futex.contains(n) {
                        futex.push(*n);
                        a.jump_imm(Cond::Eq, R7, *n as i32, &format!("{tag}futex{n}"));
                    }
                    continue;
                }
            };
            a.jump_imm(Cond::Ne, R7, *n as i32, &format!("{tag}{n}")).mov_imm(R4, layout::key_word(abi, *f)).goto(to);
            a.label(&format!("{tag}{n}"));
        }
        a.goto("out");
        let [op, _] = if compat { self.layout.args12_compat } else { self.layout.args12_native };
        for n in futex {
            a.label(&format!("{tag}futex{n}"));
            Self::part(a, R2, R8, op);
            for (f, _) in fs.iter().filter(|(_, m)| *m == n) {
                let Some(op) = f.futex_op() else { continue };
                a.mov(R1, R2).alu_imm(Alu::And, R1, op.mask as i32);
                a.jump_imm(Cond::Ne, R1, op.value as i32, &format!("{tag}futex{n}_{}", f.index()));
                a.mov_imm(R4, layout::key_word(abi, *f)).goto("have");
                a.label(&format!("{tag}futex{n}_{}", f.index()));
            }
            a.goto("out");
        }
    }

    /// With R4 the key word and R3 the first argument: store the clock id
    /// when the function takes one. clockid_t is an int in both ABIs: the
    /// low 32 bits, sign-extended. A static id (0..MAX_CLOCKS and the
    /// auxiliary clocks) is kept; a dynamic (negative) one is folded to its
    /// class, `-8 | (id & 7)` (`arch::dynamic_class`); any other (invalid
    /// ids, type 7) folds into one `other` row (id 0). Ends at the label
    /// `tail`.
    pub(super) fn clock_key(a: &mut Asm) {
        let kind = layout::KIND_SHIFT;
        a.mov(R5, R4).alu_imm(Alu::And, R5, i32::from(layout::CLOCK_ID) << kind);
        a.jump_imm(Cond::Eq, R5, 0, "tail");
        a.alu_imm(Alu::Lsh, R3, 32).alu_imm(Alu::Arsh, R3, 32);
        a.jump_imm(Cond::Slt, R3, 0, "dynamic");
        a.jump_imm(Cond::Gt, R3, STATIC_CLOCKS - 1, "other");
        a.label("store_clock");
        put(a, KEY, key::CLOCK, R3);
        a.goto("tail");
        a.label("dynamic").alu_imm(Alu::And, R3, 7).alu_imm(Alu::Or, R3, -8);
        a.jump_imm(Cond::Ne, R3, -1, "store_clock");
        a.label("other").alu_imm(Alu::Add, R4, i32::from(layout::CLOCK_OTHER - layout::CLOCK_ID) << kind);
        a.label("tail");
    }

    /// A getrandom call's [`RandomCall`] code in the key's clock word, as
    /// `RandomCall::of_args` decides it (R8 the registers, R9 the task, R4
    /// the key word, kept), then on to `done`: made inside the task's vDSO
    /// (a native task: `regs->ip - mm->context.vdso` below the vDSO's
    /// length), else flags the vDSO does not serve, else a start-up key
    /// (`GRND_NONBLOCK` alone, at most 8 bytes), else served.
    pub(super) fn random_key(&self, a: &mut Asm, compat: bool, done: &str) {
        let l = self.layout;
        let [len, flags] = if compat { l.args12_compat } else { l.args12_native };
        let tag = if compat { "rc" } else { "rn" };
        let store = |a: &mut Asm, call: RandomCall| {
            a.mov_imm(R5, call.code() as i32).goto(&format!("{tag}_store"));
        };
        match l.vdso.filter(|_| !compat) {
            Some(v) => {
                Self::member(a, Size::Dw, R1, R9, v.mm, 0).jump_imm(Cond::Eq, R1, 0, &format!("{tag}_args"));
                Self::member(a, Size::Dw, R1, R1, v.vdso, 0);
                Self::member(a, Size::Dw, R5, R8, v.ip, 0).alu_reg(Alu::Sub, R5, R1);
                a.jump_imm(Cond::Gt, R5, v.len as i32 - 1, &format!("{tag}_args"));
                store(a, RandomCall::ByVdso);
            }
            None => {
                a.goto(&format!("{tag}_args"));
            }
        }
        a.label(&format!("{tag}_args"));
        // The flags are an unsigned int: the low 32 bits.
        Self::part(a, R3, R8, flags).alu_imm(Alu::Lsh, R3, 32).alu_imm(Alu::Rsh, R3, 32);
        a.mov(R1, R3).alu_imm(Alu::And, R1, !(GRND_SERVED as i32)).jump_imm(Cond::Eq, R1, 0, &format!("{tag}_served"));
        store(a, RandomCall::UnservedFlags);
        a.label(&format!("{tag}_served")).jump_imm(Cond::Ne, R3, GRND_NONBLOCK as i32, &format!("{tag}_any"));
        Self::part(a, R2, R8, len);
        if compat {
            // A compat task's size_t: the low 32 bits.
            a.alu_imm(Alu::Lsh, R2, 32).alu_imm(Alu::Rsh, R2, 32);
        }
        a.jump_imm(Cond::Gt, R2, STARTUP_KEY_MAX as i32, &format!("{tag}_any"));
        store(a, RandomCall::StartupKey);
        a.label(&format!("{tag}_any")).mov_imm(R5, RandomCall::Served.code() as i32);
        a.label(&format!("{tag}_store"));
        put(a, KEY, key::CLOCK, R5);
        a.goto(done);
    }

    /// `tp_btf/emulate_vsyscall(int nr)`: 0 gettimeofday, 1 time, 2 getcpu.
    pub fn vsyscall(&self) -> Result<Vec<u64>, String> {
        let mut a = Asm::new();
        self.keep_ctx(&mut a);
        a.load(Size::Dw, R7, R1, 0);
        a.call(Helper::GetCurrentTaskBtf).mov(R9, R0);
        Self::zero_key(&mut a);
        self.no_site(&mut a);
        for (nr, f) in arch::vsyscall::SLOTS.iter().enumerate() {
            let word = layout::key_word(layout::ABI_VSYSCALL, *f);
            a.jump_imm(Cond::Ne, R7, nr as i32, &format!("v{nr}")).mov_imm(R4, word).goto("tail");
            a.label(&format!("v{nr}"));
        }
        a.goto("out");
        a.label("tail");
        self.count_tail(&mut a);
        a.finish()
    }

    /// `tp_btf/sched_process_fork(struct task_struct *parent, struct task_struct *child)`.
    pub fn fork(&self) -> Result<Vec<u64>, String> {
        let l = self.layout;
        let mut a = Asm::new();
        a.mov(R6, R1).load(Size::Dw, R7, R6, 8).load(Size::Dw, R8, R6, 0);
        // A new thread shares its creator's tgid: nothing to do.
        Self::member(&mut a, Size::W, R1, R7, l.pid, 0);
        Self::member(&mut a, Size::W, R2, R7, l.tgid, 0).jump_reg(Cond::Ne, R1, R2, "out");
        self.fork_ids(&mut a);
        // Key: the child's tgid; value: (root, parent's tgid, the child's
        // start in clock ticks).
        put(&mut a, FORK_KEY, proc_key::TGID, R2);
        Self::member(&mut a, Size::Dw, R4, R7, l.start, 0).alu_imm(Alu::Div, R4, self.ns_per_tick);
        put(&mut a, FORK_VAL, proc_val::START_TICKS, R4);
        put(&mut a, FORK_VAL, proc_val::PARENT, R3);
        if self.scope == Scope::Trees {
            put(&mut a, FORK_PARENT, proc_key::TGID, R3);
            a.load_map(R1, self.maps.procs)
                .mov(R2, FP)
                .alu_imm(Alu::Add, R2, i32::from(FORK_PARENT))
                .call(Helper::MapLookupElem)
                .jump_imm(Cond::Eq, R0, 0, "out")
                .load(proc_val::ROOT.size, R1, R0, proc_val::ROOT.off);
            put(&mut a, FORK_VAL, proc_val::ROOT, R1);
            // The traced parent, not one that took its pid after it exited.
            a.load(proc_val::START_TICKS.size, R2, R0, proc_val::START_TICKS.off).jump_imm(Cond::Eq, R2, 0, "traced");
            Self::member(&mut a, Size::Dw, R3, R8, l.group_leader, 0);
            Self::member(&mut a, Size::Dw, R3, R3, l.start, 0)
                .alu_imm(Alu::Div, R3, self.ns_per_tick)
                .jump_reg(Cond::Ne, R3, R2, "out")
                .label("traced");
        } else {
            put(&mut a, FORK_VAL, proc_val::ROOT, R2);
        }
        a.load_map(R1, self.maps.procs)
            .mov(R2, FP)
            .alu_imm(Alu::Add, R2, i32::from(FORK_KEY))
            .mov(R3, FP)
            .alu_imm(Alu::Add, R3, i32::from(FORK_VAL))
            .mov_imm(R4, 0)
            .call(Helper::MapUpdateElem)
            .jump_imm(Cond::Eq, R0, 0, "out");
        if self.scope == Scope::Trees {
            self.count_stat(&mut a, UNFOLLOWED);
        }
        a.label("out").mov_imm(R0, 0).exit();
        a.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::VdsoFn;

    fn generator(scope: Scope, per_thread: bool) -> Generator {
        Generator {
            layout: Layout::synthetic(),
            maps: MapFds { counts: 3, procs: 4, totals: 5, stats: 6, cgroups: None },
            scope,
            per_thread,
            host: Abi::X86_64,
            own_tgid: 4242,
            ns_per_tick: 10_000_000,
            pidns: None,
            cgroup_count: 0,
            sites: None,
            stacks: None,
        }
    }

    fn arm64_generator(scope: Scope) -> Generator {
        Generator { layout: Layout::synthetic_arm64(), host: Abi::Aarch64, ..generator(scope, false) }
    }

    fn fentry_point(abi: u8, func: VdsoFn) -> super::super::fentry::FentryPoint {
        super::super::fentry::FentryPoint { abi, func, name: "synthetic", btf_id: 200 }
    }

    /// Each program over the synthetic x86_64 and arm64 layouts, disassembled, against
    /// its golden text in fixtures/bpf/ (`VDSOCTL_REGEN_GOLDEN=1` rewrites
    /// them; the diff is the review of a change to the programs).
    #[test]
    fn programs_match_their_golden_disassembly() {
        let trees = generator(Scope::Trees, false);
        let all = generator(Scope::All, true);
        let in_ns =
            Generator { pidns: Some(PidNamespace { dev: 4, ino: 4026532512 }), ..generator(Scope::Trees, false) };
        let mut in_cgroups = generator(Scope::All, false);
        (in_cgroups.maps.cgroups, in_cgroups.cgroup_count) = (Some(7), 2);
        let stacks = Generator {
            stacks: Some(super::super::stacks::StackFds {
                rows: 7,
                traces: 8,
                buf: 9,
                words: 10,
                files: Some(11),
                over: 12,
                next: 13,
                looped: true,
            }),
            ..generator(Scope::Trees, false)
        };
        let unrolled = Generator {
            stacks: stacks.stacks.map(|s| super::super::stacks::StackFds { looped: false, ..s }),
            ..generator(Scope::Trees, false)
        };
        let programs = [
            ("sys_enter-trees", trees.sys_enter()),
            ("sys_enter-all-per-thread", all.sys_enter()),
            ("fork-trees", trees.fork()),
            ("fork-all", all.fork()),
            ("vsyscall-trees", trees.vsyscall()),
            ("sys_enter-trees-pidns", in_ns.sys_enter()),
            ("fork-trees-pidns", in_ns.fork()),
            ("sys_enter-all-cgroups", in_cgroups.sys_enter()),
            ("fentry-trees-x64-clock_gettime", trees.fentry(&fentry_point(layout::ABI_NATIVE, VdsoFn::ClockGettime))),
            ("fentry-all-ia32-gettimeofday", all.fentry(&fentry_point(layout::ABI_COMPAT, VdsoFn::Gettimeofday))),
            ("fentry-trees-x64-time", trees.fentry(&fentry_point(layout::ABI_NATIVE, VdsoFn::Time))),
            ("fentry-trees-x64-getrandom", trees.fentry(&fentry_point(layout::ABI_NATIVE, VdsoFn::Getrandom))),
            ("fentry-all-ia32-getrandom", all.fentry(&fentry_point(layout::ABI_COMPAT, VdsoFn::Getrandom))),
            (
                "sys_enter-all-sites",
                Generator {
                    sites: Some(SiteFds { map: 7, unread: 8, files: Some(9) }),
                    ..generator(Scope::All, false)
                }
                .sys_enter(),
            ),
            (
                "vsyscall-all-sites",
                Generator {
                    sites: Some(SiteFds { map: 7, unread: 8, files: Some(9) }),
                    ..generator(Scope::All, false)
                }
                .vsyscall(),
            ),
            ("arm64-sys_enter-trees", arm64_generator(Scope::Trees).sys_enter()),
            ("arm64-fork-trees", arm64_generator(Scope::Trees).fork()),
            ("sys_enter-trees-stacks", stacks.sys_enter()),
            ("sys_enter-trees-stacks-unrolled", unrolled.sys_enter()),
            ("exec-trees", trees.exec(super::super::execs::ExecFds { execs: 7, scratch: 8 })),
            ("exec-all", all.exec(super::super::execs::ExecFds { execs: 7, scratch: 8 })),
        ];
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bpf");
        let mut stale = Vec::new();
        for (name, insns) in programs {
            let text = super::super::disasm::format(&insns.unwrap_or_else(|e| panic!("{name}: {e}")));
            let path = dir.join(format!("{name}.txt"));
            if std::env::var_os("VDSOCTL_REGEN_GOLDEN").is_some() {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &text).unwrap();
            }
            let golden = std::fs::read_to_string(&path).unwrap_or_default();
            if golden != text {
                stale.push(name);
            }
        }
        assert!(
            stale.is_empty(),
            "programs differ from fixtures/bpf/*.txt: {stale:?} (VDSOCTL_REGEN_GOLDEN=1 to rewrite)"
        );
    }

    #[test]
    fn a_load_that_does_not_fit_its_member_is_an_error() {
        // A compat mark no load is as wide as.
        let mut g = generator(Scope::Trees, false);
        g.layout.compat_flags.member.size = 2;
        let e = g.sys_enter().unwrap_err();
        assert_eq!(e, "no load is 2 bytes wide (member at offset 8)");
        // regs[31] read past its end.
        let mut g = arm64_generator(Scope::Trees);
        g.layout.arg0_native.at = 248;
        assert_eq!(g.sys_enter().unwrap_err(), "a 8-byte load at +248 of a 248-byte member (offset 0) does not fit it");
        // A pointer read as half of itself.
        let mut g = generator(Scope::Trees, false);
        g.layout.group_leader.size = 4;
        assert!(g.fork().unwrap_err().contains("8-byte load"));
        // comm shorter than the two words copied.
        let mut g = generator(Scope::All, false);
        g.layout.comm.size = 8;
        assert!(g.vsyscall().unwrap_err().contains("at +8 of a 8-byte member"));
    }
}
