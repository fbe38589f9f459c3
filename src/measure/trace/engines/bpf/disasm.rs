//! A disassembler for the instructions [`Asm`](super::insn::Asm) emits, in
//! the kernel verifier's own syntax (`kernel/bpf/disasm.c`: `12: (79) r1 =
//! *(u64 *)(r6 +8)`), so a golden text reads like the log of a rejection and
//! a line of one can be found in the other. cilium/ebpf's `asm` `Format` is
//! the model: programs as text, golden-tested. Anything the builder never
//! emits prints as raw `.insn` — total over any words.

use std::fmt::Write;

/// Helper names by id, as the verifier prints them.
fn helper(id: i32) -> String {
    match id {
        1 => "bpf_map_lookup_elem#1".into(),
        2 => "bpf_map_update_elem#2".into(),
        14 => "bpf_get_current_pid_tgid#14".into(),
        16 => "bpf_get_current_comm#16".into(),
        37 => "bpf_current_task_under_cgroup#37".into(),
        113 => "bpf_probe_read_kernel#113".into(),
        115 => "bpf_probe_read_kernel_str#115".into(),
        120 => "bpf_get_ns_current_pid_tgid#120".into(),
        112 => "bpf_probe_read_user#112".into(),
        27 => "bpf_get_stackid#27".into(),
        67 => "bpf_get_stack#67".into(),
        158 => "bpf_get_current_task_btf#158".into(),
        175 => "bpf_task_pt_regs#175".into(),
        180 => "bpf_find_vma#180".into(),
        n => format!("unknown#{n}"),
    }
}

fn size(code: u8) -> &'static str {
    match code & 0x18 {
        0x00 => "u32",
        0x08 => "u16",
        0x10 => "u8",
        _ => "u64",
    }
}

fn alu(op: u8) -> Option<&'static str> {
    Some(match op {
        0x00 => "+=",
        0x10 => "-=",
        0x20 => "*=",
        0x30 => "/=",
        0x40 => "|=",
        0x50 => "&=",
        0x60 => "<<=",
        0x70 => ">>=",
        0x90 => "%=",
        0xa0 => "^=",
        0xb0 => "=",
        0xc0 => "s>>=",
        _ => return None,
    })
}

fn cond(op: u8) -> Option<&'static str> {
    Some(match op {
        0x10 => "==",
        0x20 => ">",
        0x30 => ">=",
        0x40 => "&",
        0x50 => "!=",
        0x60 => "s>",
        0x70 => "s>=",
        0xa0 => "<",
        0xb0 => "<=",
        0xc0 => "s<",
        0xd0 => "s<=",
        _ => return None,
    })
}

fn mem(base: u8, off: i16) -> String {
    format!("(r{base} {}{})", if off < 0 { "-" } else { "+" }, off.unsigned_abs())
}

/// One instruction (and the next word, for a 64-bit immediate): its text
/// and how many words it took.
fn one(insn: u64, next: Option<u64>) -> (String, usize) {
    let code = insn as u8;
    let (dst, src) = ((insn >> 8) as u8 & 0xf, (insn >> 12) as u8 & 0xf);
    let off = (insn >> 16) as u16 as i16;
    let imm = (insn >> 32) as u32 as i32;
    let raw = || format!(".insn {insn:#018x}");
    let text = match code & 0x07 {
        // LD: only `ld_imm64` (0x18), two words.
        0x00 if code == 0x18 => {
            let Some(hi) = next else { return (raw(), 1) };
            let text = match src {
                1 => format!("r{dst} = map[fd:{imm}]"),
                4 => format!("r{dst} = func[{imm:+}]"),
                _ => format!("r{dst} = {:#x}", (hi >> 32) << 32 | u64::from(imm as u32)),
            };
            return (text, 2);
        }
        0x01 if code & 0xe0 == 0x60 => format!("r{dst} = *({} *){}", size(code), mem(src, off)),
        0x02 if code & 0xe0 == 0x60 => format!("*({} *){} = {imm}", size(code), mem(dst, off)),
        0x03 if code & 0xe0 == 0x60 => format!("*({} *){} = r{src}", size(code), mem(dst, off)),
        0x03 if code & 0xe0 == 0xc0 && imm == 0 => format!("lock *({} *){} += r{src}", size(code), mem(dst, off)),
        0x03 if code & 0xe0 == 0xc0 && imm == 1 => {
            format!("r{src} = atomic64_fetch_add((u64 *){}, r{src})", mem(dst, off))
        }
        0x07 => match (alu(code & 0xf0), code & 0x08) {
            (Some(op), 0) => format!("r{dst} {op} {imm}"),
            (Some(op), _) => format!("r{dst} {op} r{src}"),
            (None, _) => raw(),
        },
        0x05 => match code & 0xf0 {
            0x00 => format!("goto pc{off:+}"),
            0x80 => format!("call {}", helper(imm)),
            0x90 => "exit".into(),
            op => match (cond(op), code & 0x08) {
                (Some(c), 0) => format!("if r{dst} {c} {:#x} goto pc{off:+}", imm),
                (Some(c), _) => format!("if r{dst} {c} r{src} goto pc{off:+}"),
                (None, _) => raw(),
            },
        },
        _ => raw(),
    };
    (text, 1)
}

/// The program as text: one line per instruction, `N: (code) text`.
pub fn format(insns: &[u64]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while let Some(&insn) = insns.get(i) {
        let (text, n) = one(insn, insns.get(i + 1).copied());
        let _ = writeln!(out, "{i}: ({:02x}) {text}", insn as u8);
        i += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::insn::*;
    use super::format;

    #[test]
    fn reads_like_the_verifier_log() {
        let mut a = Asm::new();
        a.mov(R6, R1)
            .load(Size::Dw, R7, R6, 8)
            .jump_imm(Cond::Eq, R7, 228, "x")
            .store_imm(Size::W, FP, -40, 1)
            .load_map(R1, 7)
            .atomic_add(R6, 8, R1)
            .label("x")
            .call(Helper::GetCurrentTaskBtf)
            .alu_imm(Alu::Rsh, R1, 32)
            .exit();
        let text = format(&a.finish().unwrap());
        assert_eq!(
            text,
            "0: (bf) r6 = r1\n\
             1: (79) r7 = *(u64 *)(r6 +8)\n\
             2: (15) if r7 == 0xe4 goto pc+4\n\
             3: (62) *(u32 *)(r10 -40) = 1\n\
             4: (18) r1 = map[fd:7]\n\
             6: (db) lock *(u64 *)(r6 +8) += r1\n\
             7: (85) call bpf_get_current_task_btf#158\n\
             8: (77) r1 >>= 32\n\
             9: (95) exit\n"
        );
        // Words it does not know, or a truncated ld_imm64, never panic.
        assert_eq!(format(&[0xff, 0x18]), "0: (ff) .insn 0x00000000000000ff\n1: (18) .insn 0x0000000000000018\n");
    }
}
