use super::engines::perf::random_filters;
use super::*;

#[test]
fn clock_ids_outside_the_static_ones_fold() {
    assert_eq!(Clock::of_id(0), Clock::Id(0));
    assert_eq!(Clock::of_id(10), Clock::Id(10));
    assert_eq!(Clock::of_id(15), Clock::Id(15));
    // The auxiliary clocks are kept; dynamic ids fold to their class.
    assert_eq!(Clock::of_id(16), Clock::Id(16));
    assert_eq!(Clock::of_id(23), Clock::Id(23));
    assert_eq!(Clock::of_id(24), Clock::Other);
    assert_eq!(Clock::of_id(-6), Clock::Id(-6));
    // pthread_getcpuclockid of tid 812: ((~812) << 3) | 4 | 2.
    assert_eq!(Clock::of_id((!812i64 << 3) | 6), Clock::Id(-2));
    assert_eq!(Clock::of_id((!812i64 << 3) | 7), Clock::Other, "type 7 is no clock");
    assert_eq!(Clock::of_id(1_000_000), Clock::Other);
}

#[test]
fn interval_subtraction() {
    let k = Key {
        pid: 1,
        tid: None,
        abi: Abi::X86_64,
        func: VdsoFn::ClockGettime,
        clock: Clock::Id(4),
        comm: None,
        start: 0,
    };
    let mut a = Tally::default();
    a.counts.insert(k, 10);
    let mut b = a.clone();
    b.counts.insert(k, 25);
    b.lost_records = 3;
    let d = b.since(&a);
    assert_eq!(d.counts[&k], 15);
    assert_eq!(d.lost_records, 3);
    assert_eq!(a.since(&b).counts[&k], 0);
}

/// The perf engine's getrandom filters, evaluated as the kernel's filter
/// would (`&&` over `||`, parentheses, comparisons of a field with a
/// number), split every (len, flags) the way `RandomCall::of_args` does
/// outside the vDSO: each call in exactly one counter, the same kind.
#[test]
fn getrandom_filters_split_calls_as_of_args_does() {
    fn eval(expr: &str, len: u64, flags: u64) -> bool {
        let e = expr.trim();
        if let Some(inner) = e.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
            if !inner.contains(')') {
                return eval(inner, len, flags);
            }
        }
        for op in [" || ", " && "] {
            // Split at the first operator outside parentheses.
            let mut depth = 0;
            for (i, c) in e.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ if depth == 0 && e[i..].starts_with(op) => {
                        let (l, r) = (eval(&e[..i], len, flags), eval(&e[i + op.len()..], len, flags));
                        return if op == " || " { l || r } else { l && r };
                    }
                    _ => {}
                }
            }
        }
        let parts: Vec<&str> = e.split_whitespace().collect();
        let [field, op, n] = parts.as_slice() else { panic!("{e}") };
        let v = match *field {
            "len" => len,
            "flags" => flags,
            other => panic!("field {other}"),
        };
        let n: u64 = n.parse().unwrap();
        match *op {
            "==" => v == n,
            "!=" => v != n,
            "<=" => v <= n,
            ">" => v > n,
            other => panic!("op {other}"),
        }
    }
    let filters = random_filters("len");
    for len in [0, 1, 8, 9, 16, 32, 4096] {
        for flags in [0, 1, 2, 3, 4, 5, 7, 8, 9, 0x10] {
            let hits: Vec<RandomCall> = filters.iter().filter(|(_, f)| eval(f, len, flags)).map(|(k, _)| *k).collect();
            assert_eq!(hits, [RandomCall::of_args(len, flags, false)], "len {len} flags {flags:#x}");
        }
    }
    assert!(random_filters("count")[1].1.contains("count <= 8"));
}
