//! Hand-assembled programs for the exploration: each ends in a poisoned call that the
//! verifier reaches or prunes; the expected outcome is worked out by hand from the ISA and the
//! verifier's rules (`is_branch_taken`, stack spill tracking, calls).

use super::DeadCode;
use super::cfg::Cfg;
use super::interp::{Annotation, Budget, Code, Outcome};
use super::relevance::relevant;
use super::screen::poisons_dead;
use super::solver::explore;
use crate::core::patch::POISON_HELPER_ID;
use crate::object::Insn;
use crate::test_rng::xorshift64;
use alloc::vec;
use alloc::vec::Vec;

const BUDGET: Budget = Budget {
    visits: 100_000,
    states: 1_000,
};

fn insn(code: u8, dst_reg: u8, src_reg: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        dst_reg,
        src_reg,
        off,
        imm,
    }
}

/// `rD = imm` (ALU64 MOV K, sign-extended).
fn mov64(dst: u8, imm: i32) -> Insn {
    insn(0xb7, dst, 0, 0, imm)
}

/// `wD = imm` (ALU MOV K, zero-extended).
fn mov32(dst: u8, imm: i32) -> Insn {
    insn(0xb4, dst, 0, 0, imm)
}

/// `rD = rS`.
fn mov64_reg(dst: u8, src: u8) -> Insn {
    insn(0xbf, dst, src, 0, 0)
}

/// `ld_imm64 rD = value`: two slots.
fn ld_imm64(dst: u8, src: u8, value: u64) -> [Insn; 2] {
    [
        insn(0x18, dst, src, 0, value as u32 as i32),
        insn(0, 0, 0, 0, (value >> 32) as u32 as i32),
    ]
}

fn exit() -> Insn {
    insn(0x95, 0, 0, 0, 0)
}

fn poison() -> Insn {
    insn(0x85, 0, 0, 0, POISON_HELPER_ID)
}

fn helper(id: i32) -> Insn {
    insn(0x85, 0, 0, 0, id)
}

fn call(off: i32) -> Insn {
    insn(0x85, 0, 1, 0, off)
}

/// Explore `insns` with the given annotations (the rest `None`) and global sub-programs.
fn run_with(insns: &[Insn], annotated: &[(usize, Annotation)], globals: &[u32]) -> Outcome {
    let mut annotations = vec![Annotation::None; insns.len()];
    for &(at, a) in annotated {
        annotations[at] = a;
    }
    let cfg = Cfg::new(insns, globals, |pc| {
        annotations[pc as usize] == Annotation::Kfunc
    })
    .expect("graph");
    let code = Code {
        insns,
        annotations: &annotations,
        cfg: &cfg,
        global_subprogs: globals,
        relevant: &[],
    };
    explore(&code, BUDGET).expect("explores")
}

fn run(insns: &[Insn]) -> Outcome {
    run_with(insns, &[], &[])
}

/// As [`run`], evaluating only the blocks from which a poison can be reached, as the verdicts
/// do ([`relevant`]).
fn run_relevant(insns: &[Insn]) -> Outcome {
    let annotations = vec![Annotation::None; insns.len()];
    let cfg = Cfg::new(insns, &[], |_| false).expect("graph");
    let relevant = relevant(insns, &cfg).expect("relevance");
    let code = Code {
        insns,
        annotations: &annotations,
        cfg: &cfg,
        global_subprogs: &[],
        relevant: &relevant,
    };
    explore(&code, BUDGET).expect("explores")
}

fn reached(outcome: &Outcome) -> Vec<u32> {
    let mut at: Vec<u32> = outcome.reached.iter().map(|r| r.poison).collect();
    at.sort_unstable();
    at.dedup();
    at
}

/// `r1 = a; r2 = b; if r1 OP r2 goto +1 (or OP imm); poison; r0 = 0; exit`: the poison (insn
/// 5 after the two ld_imm64s) is reached exactly when the jump is not taken.
fn jump_program(code: u8, a: u64, b: u64, with_reg: bool) -> Vec<Insn> {
    let mut p = Vec::new();
    p.extend(ld_imm64(1, 0, a));
    p.extend(ld_imm64(2, 0, b));
    if with_reg {
        p.push(insn(code | 0x08, 1, 2, 1, 0));
    } else {
        p.push(insn(code, 1, 0, 1, b as i32));
    }
    p.extend([poison(), mov64(0, 0), exit()]);
    p
}

#[test]
fn every_conditional_jump_takes_only_its_live_edge() {
    const JMP: u8 = 0x05;
    const JMP32: u8 = 0x06;
    const MINUS_ONE: u64 = u64::MAX;
    // (class | op, a, b, taken), by hand.
    let cases: &[(u8, u64, u64, bool)] = &[
        (JMP | 0x10, 5, 5, true),          // ==
        (JMP | 0x10, 5, 6, false),         //
        (JMP | 0x50, 5, 6, true),          // !=
        (JMP | 0x20, 1, MINUS_ONE, false), // > unsigned: -1 is the largest
        (JMP | 0x30, 7, 7, true),          // >=
        (JMP | 0xa0, 1, MINUS_ONE, true),  // <
        (JMP | 0xb0, 8, 7, false),         // <=
        (JMP | 0x60, 1, MINUS_ONE, true),  // s>: -1 is below 1
        (JMP | 0x70, MINUS_ONE, 1, false), // s>=
        (JMP | 0xc0, MINUS_ONE, 0, true),  // s<
        (JMP | 0xd0, 3, 3, true),          // s<=
        (JMP | 0x40, 6, 4, true),          // & (JSET)
        (JMP | 0x40, 6, 1, false),         //
        // Equal operands for every strict and non-strict order.
        (JMP | 0x20, 7, 7, false),
        (JMP | 0x30, 6, 7, false),
        (JMP | 0xa0, 7, 7, false),
        (JMP | 0xb0, 7, 7, true),
        (JMP | 0x60, 7, 7, false),
        (JMP | 0x70, 7, 7, true),
        (JMP | 0xc0, 7, 7, false),
        (JMP | 0xd0, 1, MINUS_ONE, false),
        // 32-bit compares look at the low halves only.
        (JMP32 | 0x10, 0x1_0000_0001, 1, true),
        (JMP32 | 0x20, 0x1_0000_0000, 1, false),
        (JMP32 | 0x60, 0xffff_ffff, 0, false), // w1 = -1 s> 0
        (JMP32 | 0xc0, 0x8000_0000, 0, true),  // INT_MIN s< 0
        (JMP32 | 0x40, 0x1_0000_0000, 0x1_0000_0000, false),
    ];
    for &(code, a, b, taken) in cases {
        // The immediate form compares with `b` as a sign-extended i32; use it where b fits.
        let forms: &[bool] = if i64::from(b as i32) as u64 == b || code & 0x07 == JMP32 {
            &[true, false]
        } else {
            &[true]
        };
        for &with_reg in forms {
            let outcome = run(&jump_program(code, a, b, with_reg));
            let expected: Vec<u32> = if taken { vec![] } else { vec![5] };
            assert_eq!(
                reached(&outcome),
                expected,
                "{code:#x} {a:#x} {b:#x} reg={with_reg}"
            );
            assert!(outcome.reached.iter().all(|r| r.forks.is_empty()));
            // The dead edge is recorded with the values that decided it.
            let dead = if taken { 5 } else { 6 };
            let branch = outcome.decided.get(&(4, dead)).expect("decided");
            assert_eq!(branch.left.value, Some(a));
        }
    }
}

#[test]
fn unknown_operands_fork_and_the_fork_is_evidence() {
    // r0 = helper(); if r0 == 0 goto +1; poison; exit.
    let p = [
        helper(7),
        insn(0x15, 0, 0, 1, 0),
        poison(),
        mov64(0, 0),
        exit(),
    ];
    let outcome = run(&p);
    assert_eq!(reached(&outcome), [2]);
    let forks = &outcome.reached[0].forks;
    assert_eq!(forks.len(), 1);
    assert_eq!(forks[0].insn, 1);
    assert_eq!(forks[0].left.value, None);
    assert!(outcome.visited.iter().all(|v| *v));
}

#[test]
fn alu_on_constants() {
    // Each: set r1, operate, compare with the hand-computed result; equal skips the poison.
    let cases: &[(&[Insn], u64)] = &[
        (&[mov32(1, -1)], 0xffff_ffff), // 32-bit mov zero-extends
        (&[mov64(1, -1)], u64::MAX),    // 64-bit mov sign-extends
        (&[mov64(1, 5), insn(0x87, 1, 0, 0, 0)], 5u64.wrapping_neg()), // neg
        (&[mov64(1, 5), insn(0x84, 1, 0, 0, 0)], 0xffff_fffb), // neg32
        (&[mov64(1, 0x1234), insn(0xdc, 1, 0, 0, 16)], 0x3412), // be16 (swap)
        (&[mov64(1, 0x12345), insn(0xd4, 1, 0, 0, 16)], 0x2345), // le16 (truncate)
        (
            &[mov64(1, 0x80), insn(0xbf, 2, 1, 8, 0), mov64_reg(1, 2)],
            (-128i64) as u64,
        ), // movsx8
        (&[mov64(1, -7), insn(0x37, 1, 0, 1, 2)], (-3i64) as u64), // sdiv
        (&[mov64(1, -7), insn(0x97, 1, 0, 1, 2)], (-1i64) as u64), // smod
        (&[mov64(1, 7), mov64(3, 0), insn(0x3f, 1, 3, 0, 0)], 0), // div by r3 = 0
        (&[mov64(1, 7), mov64(3, 0), insn(0x9f, 1, 3, 0, 0)], 7), // mod by r3 = 0
        (&[mov64(1, -8), insn(0xc7, 1, 0, 0, 1)], (-4i64) as u64), // arsh
        (&[mov64(1, -8), insn(0xc4, 1, 0, 0, 1)], 0xffff_fffc), // arsh32
        (
            &[mov64(1, 3), insn(0x67, 1, 0, 0, 62)],
            0xc000_0000_0000_0000,
        ), // lsh
        (&[mov32(1, 3), insn(0x04, 1, 0, 0, -4)], 0xffff_ffff), // w1 += -4 wraps in 32 bits
    ];
    for (prefix, value) in cases {
        let mut p: Vec<Insn> = prefix.to_vec();
        let at = p.len();
        p.extend(ld_imm64(2, 0, *value));
        p.push(insn(0x1d, 1, 2, 1, 0)); // if r1 == r2 goto +1
        p.extend([poison(), mov64(0, 0), exit()]);
        let outcome = run(&p);
        assert_eq!(reached(&outcome), [] as [u32; 0], "{prefix:?} = {value:#x}");
        assert!(
            outcome
                .decided
                .contains_key(&(at as u32 + 2, at as u32 + 3))
        );
    }
}

/// `r1 = 1 (relocation 9); <store>; r1 = 5; <load>; if r1 != 0 goto +1; poison; exit` with the
/// given store and load: whether the fill gives back the spilled 1.
fn spill_program(store: Insn, load: Insn) -> Vec<Insn> {
    vec![
        mov64(1, 1),
        store,
        mov64(1, 5),
        load,
        insn(0x55, 1, 0, 1, 0),
        poison(),
        mov64(0, 0),
        exit(),
    ]
}

#[test]
fn spills_and_fills_as_the_verifier_tracks_them() {
    let relocated = [(0, Annotation::Relocated(9))];
    let stx = |size: u8, off: i16| insn(0x63 | size, 10, 1, off, 0);
    let ldx = |size: u8, off: i16| insn(0x61 | size, 1, 10, off, 0);
    let (dw, w, b) = (0x18, 0x00, 0x10);
    // (store, load, poison reached): by the rules of check_stack_{write,read}_fixed_off.
    let cases = [
        (stx(dw, -8), ldx(dw, -8), false),  // 8-byte spill, 8-byte fill
        (stx(w, -16), ldx(w, -16), false),  // 4-byte spill at an aligned slot
        (stx(dw, -8), ldx(w, -8), false),   // narrower fill at the slot start
        (stx(dw, -8), ldx(b, -7), true),    // fill of another byte: unknown
        (stx(w, -4), ldx(w, -4), true),     // unaligned: the bytes are just misc
        (stx(w, -16), ldx(dw, -16), false), // wider fill restores the register
        (insn(0x7a, 10, 0, -8, 1), ldx(dw, -8), false), // BPF_ST immediate
    ];
    for (store, load, poisoned) in cases {
        let outcome = run_with(&spill_program(store, load), &relocated, &[]);
        assert_eq!(
            !reached(&outcome).is_empty(),
            poisoned,
            "{store:?} {load:?}"
        );
        if !poisoned && store.code != 0x7a {
            // The constant keeps its relocation through the spill and the fill.
            let branch = outcome.decided.get(&(4, 5)).expect("decided");
            assert_eq!(branch.left.relocation, Some(9));
        }
    }
    // A zero written anywhere is known zero (STACK_ZERO); a one at an unaligned offset is not.
    let zero = [
        mov64(1, 0),
        stx(w, -4),
        mov64(1, 5),
        ldx(w, -4),
        insn(0x15, 1, 0, 1, 0),
        poison(),
        mov64(0, 0),
        exit(),
    ];
    assert_eq!(reached(&run(&zero)), [] as [u32; 0]);
    // A helper writing through a stack pointer makes the bytes it writes unknown.
    let clobbered = [
        mov64(1, 1),
        stx(dw, -8),
        mov64_reg(1, 10),
        insn(0x07, 1, 0, 0, -8),
        mov64(2, 8),
        helper(113),
        ldx(dw, -8),
        insn(0x55, 1, 0, 1, 0),
        poison(),
        mov64(0, 0),
        exit(),
    ];
    assert_eq!(reached(&run(&clobbered)), [8]);
}

#[test]
fn static_calls_return_their_value_global_calls_do_not() {
    // main: call sub; if r0 == 0 goto +1; poison; exit.  sub (at 5): r0 = 0 (reloc 3); exit.
    let p = [
        call(4),
        insn(0x15, 0, 0, 1, 0),
        poison(),
        mov64(0, 0),
        exit(),
        mov64(0, 0),
        exit(),
    ];
    let relocated = [(5, Annotation::Relocated(3))];
    let outcome = run_with(&p, &relocated, &[]);
    assert_eq!(reached(&outcome), [] as [u32; 0]);
    assert_eq!(
        outcome.decided.get(&(1, 2)).and_then(|b| b.left.relocation),
        Some(3)
    );
    // The same sub-program as a global function: checked alone, its return value unknown.
    let outcome = run_with(&p, &relocated, &[5]);
    assert_eq!(reached(&outcome), [2]);
    // Callee-saved registers survive the call, argument registers do not.
    let p = [
        mov64(6, 0),
        mov64(1, 1),
        call(4),                // the callee at 2 + 4 + 1 = 7
        insn(0x15, 6, 0, 1, 0), // r6 == 0: always
        poison(),
        mov64(0, 0),
        exit(),
        mov64(6, 1), // the callee's own r6
        mov64(0, 0),
        exit(),
    ];
    assert_eq!(reached(&run(&p)), [] as [u32; 0]);
}

#[test]
fn a_write_at_an_unknown_stack_offset_forgets_the_frame() {
    // *(u64 *)(fp - 8) = 1; r1 = fp - 16; r1 += r0 (unknown); *(u8 *)(r1 + 0) = 7;
    // r2 = *(u64 *)(fp - 8); if r2 != 0 goto +1; poison; exit.  The verifier marks the bytes
    // the write may reach as misc, so the spilled 1 is no longer known.
    let p = [
        helper(7),
        insn(0x7a, 10, 0, -8, 1),
        mov64_reg(1, 10),
        insn(0x07, 1, 0, 0, -16),
        insn(0x0f, 1, 0, 0, 0),
        insn(0x72, 1, 0, 0, 7),
        insn(0x79, 2, 10, -8, 0),
        insn(0x55, 2, 0, 1, 0),
        poison(),
        mov64(0, 0),
        exit(),
    ];
    assert_eq!(reached(&run(&p)), [8]);
    // At a known offset the write leaves the other slot alone.
    let mut known = p;
    known[4] = insn(0x07, 1, 0, 0, 0);
    assert_eq!(reached(&run(&known)), [] as [u32; 0]);
}

/// main: *(u64 *)(fp - 8) = 0; r1 = fp - 8; call sub; r1 = *(fp - 8); if r1 == 0 goto +1;
/// poison; exit.  sub writes 1 through its argument, so the poison (at 6) is reached.
fn written_by_callee() -> [Insn; 12] {
    [
        insn(0x7a, 10, 0, -8, 0),
        mov64_reg(1, 10),
        insn(0x07, 1, 0, 0, -8),
        call(5),
        insn(0x79, 1, 10, -8, 0),
        insn(0x15, 1, 0, 1, 0),
        poison(),
        mov64(0, 0),
        exit(),
        insn(0x7a, 1, 0, 0, 1), // *(u64 *)(r1 + 0) = 1
        mov64(0, 0),
        exit(),
    ]
}

/// 0: r1 = 4; 1-2: r2 = &callback (ld_imm64 src_reg 4, at 1 + 4 + 1 = 6); 3: bpf_loop;
/// 4: r0 = 0; 5: exit; 6: poison (the callback); 7: exit.
fn poison_in_callback() -> Vec<Insn> {
    let mut p = vec![mov64(1, 4)];
    p.extend(ld_imm64(2, 4, 4));
    p.extend([helper(181), mov64(0, 0), exit(), poison(), exit()]);
    p
}

#[test]
fn poison_in_a_stack_pointer_argument_written_by_a_callee() {
    assert_eq!(reached(&run(&written_by_callee())), [6]);
}

#[test]
fn callbacks_are_explored() {
    let mut p = poison_in_callback();
    assert_eq!(reached(&run(&p)), [6]);
    // Without the callback address nothing reaches the poison.
    p[1] = mov64(2, 0);
    p[2] = mov64(2, 0);
    let outcome = run(&p);
    assert_eq!(reached(&outcome), [] as [u32; 0]);
    assert!(!outcome.visited[6]);
}

#[test]
fn load_time_values_make_load_time_branches() {
    // r1 = &rodata; r1 = *(u32 *)(r1 + 0); if r1 == 0 goto +1; poison; exit.
    let mut p: Vec<Insn> = ld_imm64(1, 0, 0).to_vec();
    p.extend([
        insn(0x61, 1, 1, 0, 0),
        insn(0x15, 1, 0, 1, 0),
        poison(),
        mov64(0, 0),
        exit(),
    ]);
    let outcome = run_with(&p, &[(0, Annotation::LoadTimeData)], &[]);
    let reach = outcome.reached.first().expect("reached");
    assert_eq!(reach.poison, 4);
    let edge = reach.load_time.expect("past a load-time branch");
    assert_eq!((edge.branch.insn, edge.taken, edge.sole), (3, false, true));
    // Against a runtime value the loader's value decides nothing (fsslower's
    // `delta >= min_lat_ns`): a plain fork.
    let mut vs_runtime: Vec<Insn> = ld_imm64(6, 0, 0).to_vec();
    vs_runtime.extend([
        insn(0x61, 6, 6, 0, 0),
        helper(7),
        insn(0x3d, 0, 6, 1, 0), // if r0 >= r6 goto +1
        poison(),
        mov64(0, 0),
        exit(),
    ]);
    let outcome = run_with(&vs_runtime, &[(0, Annotation::LoadTimeData)], &[]);
    let reach = outcome.reached.first().expect("reached");
    assert_eq!(reach.poison, 5);
    assert!(reach.load_time.is_none());
    assert!(reach.forks[0].right.load_time, "r6 is the load-time value");
    // Runtime data (a map value) is just unknown: the same path is a plain fork.
    let outcome = run_with(&p, &[(0, Annotation::RuntimeData)], &[]);
    assert!(
        outcome
            .reached
            .first()
            .expect("reached")
            .load_time
            .is_none()
    );
    // A weak ksym's address compared with 0 is known only at load time; a .rodata address is
    // never null.
    let test_addr = |a| {
        let mut p: Vec<Insn> = ld_imm64(1, 0, 0).to_vec();
        p.extend([insn(0x15, 1, 0, 1, 0), poison(), mov64(0, 0), exit()]);
        run_with(&p, &[(0, a)], &[])
    };
    let ksym = test_addr(Annotation::Extern);
    assert!(ksym.reached.first().and_then(|r| r.load_time).is_some());
    assert_eq!(reached(&test_addr(Annotation::LoadTimeData)), [3]);
    assert!(
        test_addr(Annotation::LoadTimeData).reached[0]
            .forks
            .is_empty()
    );
}

#[test]
fn only_map_values_are_non_null() {
    // `if rX == 0 goto +1; poison; exit`: the poison is reached either way; with rX a map
    // value the verifier decides the branch (no fork), with the context, a stack pointer or a
    // callback address, which its `reg_not_null` does not know to be non-null, it forks.
    let forks_on = |setup: &[Insn], reg: u8, annotated: &[(usize, Annotation)]| {
        let mut p: Vec<Insn> = setup.to_vec();
        p.extend([insn(0x15, reg, 0, 1, 0), poison(), mov64(0, 0), exit()]);
        let outcome = run_with(&p, annotated, &[]);
        let reach = outcome.reached.first().expect("reached");
        assert_eq!(reach.poison as usize, setup.len() + 1);
        !reach.forks.is_empty()
    };
    let map_value = ld_imm64(1, 0, 0);
    assert!(!forks_on(&map_value, 1, &[(0, Annotation::RuntimeData)]));
    assert!(forks_on(&[], 1, &[]), "the context");
    let fp_minus_8 = [mov64_reg(2, 10), insn(0x07, 2, 0, 0, -8)];
    assert!(forks_on(&fp_minus_8, 2, &[]), "fp - 8");
    assert!(forks_on(&ld_imm64(3, 4, 4), 3, &[]), "a function");
}

#[test]
fn loops_and_many_branches_are_analysed_in_bounded_work() {
    // An endless loop on known values: r1 takes 0, then 1, then its join (unknown); the loop
    // block is evaluated a few times, not until a budget runs out.
    let p = [
        mov64(1, 0),
        insn(0x07, 1, 0, 0, 1),
        insn(0x05, 0, 0, -2, 0),
        exit(),
    ];
    let outcome = run(&p);
    assert!(!outcome.exhausted);
    assert!(outcome.visits <= 4 * p.len() as u32, "{}", outcome.visits);
    // An endless loop on an unknown value: complete.
    let p = [helper(7), insn(0x15, 0, 0, -2, 0), mov64(0, 0), exit()];
    assert!(!run(&p).exhausted);
    // 200 independent unknown branches in a row (2^200 paths): each instruction is executed
    // a bounded number of times, and the poison at the end is reached past all of them.
    let mut p = Vec::new();
    for _ in 0..200 {
        p.extend([helper(7), insn(0x15, 0, 0, 1, 0), mov64(6, 1)]);
    }
    p.extend([poison(), exit()]);
    let outcome = run(&p);
    assert!(!outcome.exhausted);
    assert!(outcome.visits <= 2 * p.len() as u32, "{}", outcome.visits);
    assert_eq!(reached(&outcome), [600]);
    assert_eq!(outcome.reached[0].forks.len(), 200);
    // Calls nested deeper than the verifier's 8 frames stop the path and count as exhausted.
    let p = [call(-1)];
    assert!(run(&p).exhausted);
}

#[test]
fn a_kfunc_call_is_a_helper_call() {
    // clang emits `call -1` (src_reg 1) for a kfunc; libbpf makes it a kfunc call. Read as a
    // BPF-to-BPF call it would call itself until the frame limit.
    let p = [call(-1), mov64(0, 0), exit()];
    let outcome = run_with(&p, &[(0, Annotation::Kfunc)], &[]);
    assert!(!outcome.exhausted);
    assert!(outcome.visited.iter().all(|v| *v));
}

#[test]
fn a_dead_edge_labels_the_code_behind_it() {
    // if r1(=0) != 0 goto +2; r0 = 0; exit; poison (only via the dead edge); exit.
    let p = [
        mov64(1, 0),
        insn(0x55, 1, 0, 2, 0),
        mov64(0, 0),
        exit(),
        mov64(0, 1),
        poison(),
        exit(),
    ];
    let outcome = run(&p);
    let cfg = Cfg::new(&p, &[], |_| false).expect("graph");
    let labels = DeadCode::label(&cfg, &outcome).expect("labels");
    let (guard, dead) = labels.guard(5).expect("guarded");
    assert_eq!((guard.insn, dead), (1, 4));
    assert!(labels.guard(2).is_none(), "visited code has no guard");
}

#[test]
fn arbitrary_instructions_never_panic_and_stay_in_budget() {
    // A fixed, dependency-free stream of instruction soup: mostly valid opcodes of every class
    // (any byte now and then), registers mostly r0-r10 (past it now and then), offsets and
    // immediates small enough to land inside the program, poisons among the calls.
    let mut next = xorshift64(0x9e37_79b9_7f4a_7c15);
    let mut codes: Vec<u8> = vec![0x18, 0x85, 0x95, 0xc3, 0xdb, 0xd4, 0xdc, 0xd7, 0x87, 0x84];
    for class in [0x04, 0x07, 0x05, 0x06] {
        for op in (0x00..=0xd0).step_by(0x10) {
            codes.extend([class | op, class | op | 0x08]);
        }
    }
    for size in [0x00, 0x08, 0x10, 0x18] {
        codes.extend([0x61 | size, 0x81 | size, 0x62 | size, 0x63 | size]);
    }
    let budget = Budget {
        visits: 5_000,
        states: 200,
    };
    let mut total_visits = 0;
    let mut total_visited = 0;
    for _ in 0..2_000 {
        let len = (next() % 48 + 1) as usize;
        let insns: Vec<Insn> = (0..len)
            .map(|_| {
                let r = next();
                let code = if r % 32 == 0 {
                    (r >> 8) as u8
                } else {
                    codes[(r >> 8) as usize % codes.len()]
                };
                let reg = |bits: u64| {
                    if r % 16 == 1 {
                        bits as u8 & 0x0f
                    } else {
                        (bits % 11) as u8
                    }
                };
                let imm = match (code, (r >> 40) % 4) {
                    (0x85, 0) => POISON_HELPER_ID,
                    (0x85, _) => (r >> 44) as i32 % 8,
                    _ if r >> 63 == 0 => ((r >> 32) as i32) % 16,
                    _ => (r >> 32) as i32,
                };
                let src = if code == 0x85 || code == 0x18 {
                    ((r >> 12) % 5) as u8
                } else {
                    reg(r >> 12)
                };
                insn(code, reg(r >> 16), src, ((r >> 20) as i16) % 6, imm)
            })
            .collect();
        let annotations: Vec<Annotation> = (0..len)
            .map(|i| match next() % 8 {
                0 => Annotation::Relocated(i as u32),
                1 => Annotation::LoadTimeData,
                2 => Annotation::Extern,
                3 => Annotation::RuntimeData,
                _ => Annotation::None,
            })
            .collect();
        let globals = [(next() % len as u64) as u32];
        let cfg = Cfg::new(&insns, &globals, |pc| {
            annotations[pc as usize] == Annotation::Kfunc
        })
        .expect("graph");
        let code = Code {
            insns: &insns,
            annotations: &annotations,
            cfg: &cfg,
            global_subprogs: &globals,
            relevant: &[],
        };
        let outcome = explore(&code, budget).expect("explores");
        assert!(outcome.visits <= budget.visits);
        assert!(outcome.reached.iter().all(|r| (r.poison as usize) < len));
        DeadCode::label(&cfg, &outcome).expect("labels");
        total_visits += outcome.visits;
        total_visited += outcome.visited.iter().filter(|v| **v).count();
    }
    // The soup gets somewhere: past its first instructions, eight or more of its 24.5 on
    // average, each executed about once (the pass is linear, it follows no paths).
    assert!(total_visited > 2_000 * 8, "{total_visited}");
    assert!(total_visits < 2_000 * 48, "{total_visits}");
}

/// Blocks from which no poison can be reached are not evaluated, and the poisons reached stay
/// the same: a guarded read with a long tail after it, a poison after a static call (whose
/// callee's return must still be evaluated), a callee writing through a stack pointer, a poison
/// in a callback.
#[test]
fn only_blocks_that_lead_to_a_poison_are_evaluated() {
    // 0: r0 = helper() (unknown); 1: if r0 != 0 goto +1; 2: poison; 3-12: a tail of ten
    // helper calls; exit. Both edges of 1 are live: the poison is reached, and so is the tail.
    let mut guarded = vec![helper(7), insn(0x55, 0, 0, 1, 0), poison()];
    guarded.extend((0..10).map(|_| helper(7)));
    guarded.extend([mov64(0, 0), exit()]);
    let all = run(&guarded);
    let pruned = run_relevant(&guarded);
    assert_eq!(reached(&all), [2]);
    assert_eq!(reached(&pruned), [2]);
    assert!(all.visited[5] && !pruned.visited[5]);
    assert!(pruned.visits < all.visits);

    // The callee decides the branch after the call: r0 = 1 reaches the poison, 0 does not.
    for (returned, expected) in [(1, vec![2]), (0, vec![])] {
        let p = [
            call(4),
            insn(0x15, 0, 0, 1, 0),
            poison(),
            mov64(0, 0),
            exit(),
            mov64(0, returned),
            exit(),
        ];
        assert_eq!(
            reached(&run_relevant(&p)),
            expected,
            "callee returns {returned}"
        );
        assert_eq!(reached(&run(&p)), expected);
    }
    assert_eq!(reached(&run_relevant(&written_by_callee())), [6]);
    assert_eq!(reached(&run_relevant(&poison_in_callback())), [6]);
}

/// The screen settles a guard right before a poison, and nothing it cannot see: a test reached
/// by a jump as well as by the move, or one on a register the move did not write.
#[test]
fn the_screen_settles_a_guard_right_before_its_poison() {
    // 0: r1 = 0 (a relocated field_exists); 1: if r1 == 0 goto +1; 2: poison; 3: exit.
    let guarded = [mov64(1, 0), insn(0x15, 1, 0, 1, 0), poison(), exit()];
    assert!(poisons_dead(&guarded, &[]).unwrap());
    // The same with the test also the target of a jump from before the move.
    let joined = [
        insn(0x05, 0, 0, 1, 0),
        mov64(1, 0),
        insn(0x15, 1, 0, 1, 0),
        poison(),
        exit(),
    ];
    assert!(!poisons_dead(&joined, &[]).unwrap());
    // A test of another register.
    let other = [mov64(1, 0), insn(0x15, 2, 0, 1, 0), poison(), exit()];
    assert!(!poisons_dead(&other, &[]).unwrap());
    // The live edge leads to the poison.
    let live = [mov64(1, 1), insn(0x15, 1, 0, 1, 0), poison(), exit()];
    assert!(!poisons_dead(&live, &[]).unwrap());
    // Reached through a static call: the callee's code is walked.
    let called = [
        insn(0x85, 0, 1, 0, 1),
        exit(),
        mov64(1, 1),
        insn(0x15, 1, 0, 1, 0),
        poison(),
        exit(),
    ];
    assert!(!poisons_dead(&called, &[]).unwrap());
}

/// Whatever the code, a program the screen settles has no poison the propagation reaches:
/// a soup of moves of small immediates, tests of the same few registers (64- and 32-bit, every
/// comparison), jumps, static calls, helper calls, exits and poisons.
#[test]
fn the_screen_settles_only_what_no_path_reaches() {
    let mut next = xorshift64(0x2545_f491_4f6c_dd1d);
    let budget = Budget {
        visits: 100_000,
        states: 10_000,
    };
    let (mut settled, mut settled_with_poison, mut unsettled_unreached) = (0, 0, 0);
    for _ in 0..5_000 {
        let len = (next() % 24 + 4) as usize;
        let insns: Vec<Insn> = (0..len)
            .map(|_| {
                let r = next();
                let reg = (r >> 8) as u8 % 3;
                let small = (r >> 16) as i32 % 3;
                let off = (r >> 24) as i16 % 4;
                match r % 10 {
                    0..=2 => mov64(reg, small),
                    3..=5 => {
                        let ops = [
                            0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0xa0, 0xb0, 0xc0, 0xd0,
                        ];
                        let op = ops[(r >> 32) as usize % ops.len()];
                        let class = if r >> 63 == 0 { 0x05 } else { 0x06 };
                        insn(class | op, reg, 0, off, small)
                    }
                    6 => poison(),
                    7 => insn(0x05, 0, 0, off, 0),
                    8 if r >> 62 == 0 => insn(0x85, 0, 1, 0, i32::from(off)),
                    8 => helper(1),
                    _ => exit(),
                }
            })
            .collect();
        let annotations = vec![Annotation::None; len];
        let cfg = Cfg::new(&insns, &[], |_| false).expect("graph");
        let code = Code {
            insns: &insns,
            annotations: &annotations,
            cfg: &cfg,
            global_subprogs: &[],
            relevant: &[],
        };
        let outcome = explore(&code, budget).expect("explores");
        let dead = poisons_dead(&insns, &[]).expect("screens");
        if dead {
            assert!(
                outcome.reached.is_empty(),
                "{insns:?}: settled, yet {:?}",
                outcome.reached
            );
            settled += 1;
            settled_with_poison += usize::from(insns.iter().any(|i| *i == poison()));
        } else if outcome.reached.is_empty() && !outcome.exhausted {
            unsettled_unreached += 1;
        }
    }
    // The soup exercises both sides: programs settled with a poison in them, and programs the
    // screen leaves to the propagation, which then finds no poison reached either.
    assert!(
        settled_with_poison > 500,
        "{settled} settled, {settled_with_poison} with poison"
    );
    assert!(unsettled_unreached > 50, "{unsettled_unreached}");
}
