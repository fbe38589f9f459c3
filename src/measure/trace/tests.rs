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
