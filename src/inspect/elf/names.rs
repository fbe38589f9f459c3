//! What the bytes of an image mean in readelf's and objdump's words:
//! note descriptors (build-id, kernel version, GNU properties), symbol
//! types and bindings, objdump's flag column, `e_type`.

use super::Symbol;
use crate::arch::machine::{AARCH64 as EM_AARCH64, I386 as EM_386, X86_64 as EM_X86_64};

/// Names and decodes the notes a vDSO carries (`include/linux/elfnote.h`,
/// the kernel's `vdso/note.S`, glibc's `elf.h`); others stay undecoded.
pub(super) fn decode_note(
    owner: &str,
    n_type: u32,
    desc: &[u8],
    le: bool,
    machine: u16,
    is_64: bool,
) -> (Option<&'static str>, Option<String>) {
    let word = |i: usize| -> Option<u32> {
        let b: [u8; 4] = desc.get(i * 4..i * 4 + 4)?.try_into().ok()?;
        Some(if le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    };
    match (owner, n_type) {
        ("Linux", 0) => {
            let text = (desc.len() == 4).then(|| word(0)).flatten().map(version_code);
            (Some("LINUX_VERSION_CODE"), text)
        }
        ("Linux", 0x100) => (Some("LINUX_ELFNOTE_BUILD_SALT"), Some(c_text(desc))),
        ("Linux", 0x101) => (Some("LINUX_ELFNOTE_LTO_INFO"), word(0).map(|w| format!("LTO {}", w != 0))),
        ("GNU", 1) => {
            let text = match (word(0), word(1), word(2), word(3)) {
                (Some(os), Some(a), Some(b), Some(c)) => {
                    let os = match os {
                        0 => "Linux".to_string(),
                        1 => "Hurd".to_string(),
                        2 => "Solaris".to_string(),
                        3 => "FreeBSD".to_string(),
                        4 => "NetBSD".to_string(),
                        5 => "Syllable".to_string(),
                        n => format!("OS {n}"),
                    };
                    Some(format!("OS: {os}, ABI: {a}.{b}.{c}"))
                }
                _ => None,
            };
            (Some("NT_GNU_ABI_TAG"), text)
        }
        ("GNU", 3) => (Some("NT_GNU_BUILD_ID"), Some(desc.iter().map(|b| format!("{b:02x}")).collect())),
        ("GNU", 4) => (Some("NT_GNU_GOLD_VERSION"), Some(c_text(desc))),
        ("GNU", 5) => (Some("NT_GNU_PROPERTY_TYPE_0"), Some(gnu_properties(desc, le, machine, is_64))),
        _ => (None, None),
    }
}

/// An `NT_GNU_PROPERTY_TYPE_0` descriptor in readelf's words (binutils
/// 2.40 `print_gnu_property_note`, properties joined by ", " as `readelf
/// -n --wide` joins them): "AArch64 feature: BTI, PAC", "x86 feature: IBT,
/// SHSTK", "x86 ISA needed: x86-64-baseline", or the raw bytes of a
/// property it has no name for.
pub fn gnu_properties(desc: &[u8], le: bool, machine: u16, is_64: bool) -> String {
    let size = if is_64 { 8 } else { 4 };
    if desc.len() < 8 || desc.len() % size != 0 {
        return format!("<corrupt GNU_PROPERTY_TYPE, size = {:#x}>", desc.len());
    }
    let word = |at: usize| -> Option<u32> {
        let b: [u8; 4] = desc.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    };
    let mut parts: Vec<String> = Vec::new();
    let mut at = 0usize;
    while at < desc.len() {
        let (Some(kind), Some(datasz)) = (word(at), word(at + 4)) else {
            parts.push(format!("<corrupt descsz: {:#x}>", desc.len()));
            break;
        };
        at += 8;
        let datasz = datasz as usize;
        if datasz > desc.len() - at {
            parts.push(format!("<corrupt type ({kind:#x}) datasz: {datasz:#x}>"));
            break;
        }
        let data = &desc[at..at + datasz];
        let bits = if datasz == 4 { word(at).unwrap_or(0) } else { 0 };
        let x86 = matches!(machine, EM_X86_64 | EM_386);
        let named = match kind {
            0xc000_0002 if x86 => Some(("x86 feature: ", X86_FEATURE_1, true)),
            0xc001_0001 if x86 => Some(("x86 feature used: ", X86_FEATURE_2, true)),
            0xc000_8001 if x86 => Some(("x86 feature needed: ", X86_FEATURE_2, true)),
            0xc001_0002 if x86 => Some(("x86 ISA used: ", X86_ISA_1, true)),
            0xc000_8002 if x86 => Some(("x86 ISA needed: ", X86_ISA_1, true)),
            0xc000_0000 if machine == EM_AARCH64 => Some(("AArch64 feature: ", AARCH64_FEATURE_1, false)),
            _ => None,
        };
        let text = match named {
            Some((label, _, _)) if datasz != 4 => format!("{label}<corrupt length: {datasz:#x}> "),
            Some((label, names, none_word)) => format!("{label}{}", bit_names(bits, names, none_word)),
            None if kind == 1 && datasz == size => {
                let v = if is_64 {
                    let b: [u8; 8] = data.try_into().unwrap_or([0; 8]);
                    if le {
                        u64::from_le_bytes(b)
                    } else {
                        u64::from_be_bytes(b)
                    }
                } else {
                    u64::from(bits)
                };
                format!("stack size: {v:#x}")
            }
            None if kind == 2 && datasz == 0 => "no copy on protected ".to_string(),
            None => {
                let class = if kind < 0xc000_0000 {
                    "unknown"
                } else if kind < 0xe000_0000 {
                    "processor-specific"
                } else {
                    "application-specific"
                };
                let bytes: String = data.iter().map(|b| format!("{b:02x} ")).collect();
                format!("<{class} type {kind:#x} data: {bytes}>")
            }
        };
        parts.push(text);
        at += (datasz + size - 1) & !(size - 1);
    }
    parts.join(", ")
}

const AARCH64_FEATURE_1: &[(u32, &str)] = &[(1, "BTI"), (2, "PAC")];
const X86_FEATURE_1: &[(u32, &str)] = &[(1, "IBT"), (2, "SHSTK"), (4, "LAM_U48"), (8, "LAM_U57")];
const X86_ISA_1: &[(u32, &str)] = &[(1, "x86-64-baseline"), (2, "x86-64-v2"), (4, "x86-64-v3"), (8, "x86-64-v4")];
const X86_FEATURE_2: &[(u32, &str)] = &[
    (0x1, "x86"),
    (0x2, "x87"),
    (0x4, "MMX"),
    (0x8, "XMM"),
    (0x10, "YMM"),
    (0x20, "ZMM"),
    (0x40, "FXSR"),
    (0x80, "XSAVE"),
    (0x100, "XSAVEOPT"),
    (0x200, "XSAVEC"),
    (0x400, "TMM"),
    (0x800, "MASK"),
];

/// Set bits lowest first, by name, unknown ones as `<unknown: N>`; a zero
/// word is `<None>` where readelf says so (x86), nothing otherwise (AArch64).
fn bit_names(mut bits: u32, names: &[(u32, &str)], none_word: bool) -> String {
    if bits == 0 {
        return if none_word { "<None>".into() } else { String::new() };
    }
    let mut out = Vec::new();
    while bits != 0 {
        let bit = bits & bits.wrapping_neg();
        bits &= !bit;
        out.push(
            names.iter().find(|(b, _)| *b == bit).map_or_else(|| format!("<unknown: {bit:x}>"), |(_, n)| n.to_string()),
        );
    }
    out.join(", ")
}

/// Text up to the first NUL, lossily decoded.
fn c_text(desc: &[u8]) -> String {
    String::from_utf8_lossy(desc.split(|&b| b == 0).next().unwrap_or(&[])).into_owned()
}

/// `KERNEL_VERSION(a, b, c)` = `(a << 16) + (b << 8) + c` back to "a.b.c"
/// (c saturates at 255 in kernels since 4.9.256).
pub fn version_code(code: u32) -> String {
    format!("{}.{}.{}", code >> 16, (code >> 8) & 0xff, code & 0xff)
}

/// STT_* as readelf names it; unknown values in hex.
pub fn type_name(kind: u8) -> String {
    match kind {
        0 => "NOTYPE".into(),
        1 => "OBJECT".into(),
        2 => "FUNC".into(),
        3 => "SECTION".into(),
        4 => "FILE".into(),
        5 => "COMMON".into(),
        6 => "TLS".into(),
        10 => "GNU_IFUNC".into(),
        k => format!("{k:#x}"),
    }
}

/// STB_* as readelf names it; unknown values in hex.
pub fn bind_name(bind: u8) -> String {
    match bind {
        0 => "LOCAL".into(),
        1 => "GLOBAL".into(),
        2 => "WEAK".into(),
        10 => "GNU_UNIQUE".into(),
        b => format!("{b:#x}"),
    }
}

/// The 7 flag characters objdump prints between value and section
/// (`g    DF`, ` w   DF`, `g    DO`).
pub fn objdump_flags(sym: &Symbol) -> String {
    let scope = match sym.bind {
        0 => 'l',
        1 => 'g',
        10 => 'u',
        _ => ' ',
    };
    let weak = if sym.bind == 2 { 'w' } else { ' ' };
    let ifunc = if sym.kind == 10 { 'i' } else { ' ' };
    let kind = match sym.kind {
        2 | 10 => 'F',
        4 => 'f',
        1 | 5 | 6 => 'O',
        _ => ' ',
    };
    format!("{scope}{weak}  {ifunc}D{kind}")
}

/// `e_type` as readelf names it.
pub fn elf_type_name(t: u16) -> String {
    match t {
        0 => "NONE".into(),
        1 => "REL".into(),
        2 => "EXEC".into(),
        3 => "DYN".into(),
        4 => "CORE".into(),
        t => format!("{t:#x}"),
    }
}
