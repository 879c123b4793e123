//! Kernels on values stored narrow (issue 11): `f16`/`bf16` computed in `f32`, 8- and 16-bit
//! integers in `i32` (as `sparse eval`'s interpreter does): every load widens, the output is
//! computed in the wide type and stored back once. Each expected value below is what the
//! narrow type alone would get wrong.

use sparse::runtime::half::{bf16, f16};
use sparse::sparse_format;
use sparse::Par;

sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    pub Dense = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>;
    pub kernel spmv_f16(y: &mut [f16], a: &Csr<f16>, x: &[f16]) { y(i) = a(i, j) * x(j) }
    pub kernel total_f16(s: &mut f16, a: &Csr<f16>) { s = sum(i j, a(i, j)) }
    pub kernel spgemm_bf16(c: &mut Csr<bf16>, a: &Csr<bf16>, b: &Csr<bf16>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel transpose_f16(c: &mut Csr<f16>, a: &Csr<f16>) { c(j, i) = a(i, j) }
    pub kernel halve_i8(c: &mut Csr<i8>, a: &Csr<i8>) { c(i, j) = (a(i, j) + a(i, j)) / 2 }
    pub kernel mean_u8(d: &mut Dense<u8>, a: &Csr<u8>) { d(i, j) = (d(i, j) + a(i, j)) / 2 }
    pub kernel add_into_u8(d: &mut Dense<u8>, a: &Csr<u8>) { d(i, j) += (a(i, j) + a(i, j)) / 4 + d(i, j) / 4 }
    pub kernel spmv_par_f16(par: Par, y: &mut [f16], a: &Csr<f16>, x: &[f16]) { y(i) = a(i, j) * x(j) }
    pub kernel add_spmv_i16(y: &mut [i16], a: &Csr<i16>, x: &[i16]) { y(i) += a(i, j) * x(j) / 2 }
}

fn entries<V: Copy>(c: &Csr<V>) -> Vec<([usize; 2], V)> {
    c.iter().map(|(ij, v)| (ij, *v)).collect()
}

#[test]
fn f16_sums_accumulate_in_f32() {
    // 3000 ones: an f16 running sum stops at 2048 (2048 + 1 rounds back to 2048); in f32 the
    // sum is exact and 3000 is an f16 value
    let one = f16::from_f32(1.0);
    let mut coo: Vec<([usize; 2], f16)> = (0..3000).map(|j| ([0, j], one)).collect();
    coo.push(([1, 0], f16::from_f32(0.1)));
    coo.push(([1, 1], f16::from_f32(0.2)));
    let a = Csr::from_coo([2, 3000], coo).unwrap();
    let x = vec![one; 3000];
    let mut y = [f16::from_f32(7.0); 2];
    spmv_f16(&mut y, &a, &x).unwrap();
    let row1 = f16::from_f32(0.1).to_f32() + f16::from_f32(0.2).to_f32();
    assert_eq!(y, [f16::from_f32(3000.0), f16::from_f32(row1)]);

    for par in [Par::Seq, Par::rayon(2)] {
        let mut y_par = [f16::from_f32(7.0); 2];
        spmv_par_f16(par, &mut y_par, &a, &x).unwrap();
        assert_eq!(y_par, y);
    }

    let mut s = f16::from_f32(-5.0);
    total_f16(&mut s, &a).unwrap();
    assert_eq!(s, f16::from_f32(3000.0 + row1));
}

#[test]
fn bf16_spgemm_rounds_once() {
    // a 1x3 times 3x1: 1 + 2^-8 + 2^-8 is 1 in bf16 step by step (8 bits of mantissa), but
    // 1 + 2^-7 = 1.0078125 in f32, a bf16 value
    let b = |x: f32| bf16::from_f32(x);
    let eps = 2f32.powi(-8);
    let a = Csr::from_coo(
        [1, 3],
        [([0, 0], b(1.0)), ([0, 1], b(eps)), ([0, 2], b(eps))],
    )
    .unwrap();
    let bm = Csr::from_coo(
        [3, 1],
        [([0, 0], b(1.0)), ([1, 0], b(1.0)), ([2, 0], b(1.0))],
    )
    .unwrap();
    let mut c = Csr::from_coo([1, 1], []).unwrap();
    spgemm_bf16(&mut c, &a, &bm).unwrap();
    assert_eq!(entries(&c), [([0, 0], b(1.0 + 2.0 * eps))]);
    assert_ne!(b(1.0 + 2.0 * eps), b(1.0));
}

#[test]
fn f16_transpose_keeps_values() {
    let h = |x: f32| f16::from_f32(x);
    let a = Csr::from_coo(
        [2, 3],
        [([0, 2], h(0.1)), ([1, 0], h(-2.5)), ([1, 2], h(65504.0))],
    )
    .unwrap();
    let mut c = Csr::from_coo([3, 2], []).unwrap();
    transpose_f16(&mut c, &a).unwrap();
    assert_eq!(
        entries(&c),
        [([0, 1], h(-2.5)), ([2, 0], h(0.1)), ([2, 1], h(65504.0))]
    );
}

#[test]
fn narrow_integers_compute_in_i32() {
    // (100 + 100) / 2: 100 in i32; in i8, 100 + 100 wraps to -56 first, then -28
    let a = Csr::from_coo([1, 3], [([0, 0], 100i8), ([0, 1], -128), ([0, 2], 7)]).unwrap();
    let mut c = Csr::from_coo([1, 3], []).unwrap();
    halve_i8(&mut c, &a).unwrap();
    assert_eq!(entries(&c), [([0, 0], 100), ([0, 1], -128), ([0, 2], 7)]);

    // a dense u8 output that the statement reads: (200 + 250) / 2 = 225 (u8 alone: 97);
    // where `a` has no entry, 200 / 2
    let a = Csr::from_coo([1, 2], [([0, 0], 250u8)]).unwrap();
    let mut d = Dense::from_coo([1, 2], [([0, 0], 200u8), ([0, 1], 200)]).unwrap();
    mean_u8(&mut d, &a).unwrap();
    assert_eq!(d.values, [225, 100]);

    // `+=` into a dense u8 output read on the right: 200 + (250 + 250) / 4 + 200 / 4 = 375,
    // stored as 119 (u8 alone: 250 + 250 wraps to 244, giving 311, stored as 55)
    let a = Csr::from_coo([1, 1], [([0, 0], 250u8)]).unwrap();
    let mut d = Dense::from_coo([1, 1], [([0, 0], 200u8)]).unwrap();
    add_into_u8(&mut d, &a).unwrap();
    assert_eq!(d.values, [119]);

    // `+=` into an i16 slice, each term halved: 300 * 300 / 2 = 45000 in i32 (i16 alone
    // wraps 90000 to 24464 first); 30000 + 45000 = 75000 is stored wrapping, as `as i16`
    let a = Csr::from_coo([2, 1], [([0, 0], 300i16), ([1, 0], 3)]).unwrap();
    let mut y = [30000i16, 1];
    add_spmv_i16(&mut y, &a, &[300]).unwrap();
    assert_eq!(y, [(30000i32 + 45000) as i16, 1 + 450]);
    assert_eq!(y[0], 9464);
}
