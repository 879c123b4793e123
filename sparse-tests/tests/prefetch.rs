//! The SpMV loops with their software prefetches on (`sparse_runtime::prefetch`, issue 12):
//! this test binary sets `SPARSE_PREFETCH=1` before any kernel runs, so the loops of a matrix
//! whose values span `prefetch::MIN_BYTES` take the prefetching path on any processor, and
//! their results must be exactly those of a plain loop (the values are small integers, so
//! every sum is exact in any order).

use sparse::runtime::prefetch;

sparse::sparse_format! {
    Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    Csr16 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>;
    Bsr3 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 3 : dense, j floordiv 3 : compressed, i mod 3 : dense, j mod 3 : dense), posWidth = 32, crdWidth = 32 }>;
    kernel spmv_declared(y: &mut [f64], a: &Csr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
}

/// Rows of the CSR matrices: 2^19 rows of 5 entries, 2.6M values (21 MB of `f64`).
const ROWS: usize = 1 << 19;
/// Entries per row.
const PER_ROW: usize = 5;
/// Columns of the matrices (the 16-bit form's coordinates fit).
const COLS: usize = 60_000;

/// The distinct columns `(first + step k) mod n`, `k < count`, in increasing order.
fn columns(first: usize, step: usize, count: usize, n: usize) -> Vec<u32> {
    let mut row: Vec<u32> = (0..count)
        .map(|k| ((first + step * k) % n) as u32)
        .collect();
    row.sort_unstable();
    row.dedup();
    row
}

/// `(positions, coordinates, values)` of a CSR matrix of [`ROWS`] rows: row `i` holds columns
/// `(i * 7 + 13 k) mod COLS`, `k < PER_ROW` (increasing), with values `1 + (i + k) mod 5`.
fn csr_arrays() -> (Vec<u32>, Vec<u32>, Vec<f64>) {
    let mut pos = Vec::with_capacity(ROWS + 1);
    let mut crd = Vec::with_capacity(ROWS * PER_ROW);
    let mut values = Vec::with_capacity(ROWS * PER_ROW);
    pos.push(0u32);
    for i in 0..ROWS {
        for (k, c) in columns(i * 7, 13, PER_ROW, COLS).iter().enumerate() {
            crd.push(*c);
            values.push(1.0 + ((i + k) % 5) as f64);
        }
        pos.push(crd.len() as u32);
    }
    (pos, crd, values)
}

/// `x[j] = 1 + j mod 7`.
fn x_of(n: usize) -> Vec<f64> {
    (0..n).map(|j| 1.0 + (j % 7) as f64).collect()
}

/// `y = A·x` by a plain loop over CSR arrays.
fn plain(pos: &[u32], crd: &[u32], values: &[f64], x: &[f64]) -> Vec<f64> {
    pos.windows(2)
        .map(|w| {
            (w[0] as usize..w[1] as usize)
                .map(|p| values[p] * x[crd[p] as usize])
                .sum()
        })
        .collect()
}

#[test]
fn spmv_with_prefetches_equals_a_plain_loop() {
    // the only test of this binary: set before any kernel asks (the answer is kept)
    std::env::set_var("SPARSE_PREFETCH", "1");
    assert!(
        prefetch::cpu_gains(),
        "SPARSE_PREFETCH=1 turns the prefetches on"
    );

    let (pos, crd, values) = csr_arrays();
    let x = x_of(COLS);
    let want = plain(&pos, &crd, &values, &x);
    let a = Csr::<f64>::from_raw_parts(CsrParts {
        dim_shape: [ROWS, COLS],
        pos_1: pos.clone(),
        crd_1: crd.clone(),
        values: values.clone(),
    })
    .expect("valid CSR");
    assert!(prefetch::enabled(a.values()), "21 MB of values");
    let mut y = vec![f64::NAN; ROWS];
    a.spmv(&x, &mut y).expect("spmv");
    assert_eq!(y, want, "Csr::spmv");
    let mut y = vec![f64::NAN; ROWS];
    a.spmv_par(&x, &mut y).expect("spmv_par");
    assert_eq!(y, want, "Csr::spmv_par");
    let mut y = vec![f64::NAN; ROWS];
    spmv_declared(&mut y, &a, &x).expect("declared spmv");
    assert_eq!(y, want, "the declared kernel");

    // 16-bit coordinates: the coordinates' stream in its own width
    let a16 = Csr16::<f64>::from_raw_parts(Csr16Parts {
        dim_shape: [ROWS, COLS],
        pos_1: pos.clone(),
        crd_1: crd.iter().map(|&c| c as u16).collect(),
        values: values.clone(),
    })
    .expect("valid CSR, u16");
    let mut y = vec![f64::NAN; ROWS];
    a16.spmv(&x, &mut y).expect("Csr16 spmv");
    assert_eq!(y, want, "Csr16::spmv");

    // a matrix just under the size: no prefetch asked, the same sums
    let small = Csr::<f64>::from_raw_parts(CsrParts {
        dim_shape: [4, COLS],
        pos_1: pos[..5].to_vec(),
        crd_1: crd[..pos[4] as usize].to_vec(),
        values: values[..pos[4] as usize].to_vec(),
    })
    .expect("valid CSR");
    assert!(!prefetch::enabled(small.values()));
    let mut y = vec![f64::NAN; 4];
    small.spmv(&x, &mut y).expect("spmv");
    assert_eq!(y, want[..4]);

    // BSR 3x3: 2^16 + 1 block rows of 4 blocks, 2.4M values (19 MB; an odd count: the serial
    // kernel visits them in `prefetch::row_order`'s halves, whose middle row has no partner);
    // block row `b` holds block columns `(b * 5 + 7 k) mod (COLS / 3)`, value
    // `1 + (b + k + e) mod 4` at element `e`
    let (block_rows, block_cols) = ((1usize << 16) + 1, COLS / 3);
    let (mut bpos, mut bcrd, mut bvalues) = (vec![0u32], Vec::new(), Vec::new());
    for b in 0..block_rows {
        for (k, c) in columns(b * 5, 7, 4, block_cols).iter().enumerate() {
            bcrd.push(*c);
            bvalues.extend((0..9).map(|e| 1.0 + ((b + k + e) % 4) as f64));
        }
        bpos.push(bcrd.len() as u32);
    }
    // the same matrix as CSR arrays, for the plain loop
    let (mut cpos, mut ccrd, mut cvalues) = (vec![0u32], Vec::new(), Vec::new());
    for b in 0..block_rows {
        for r in 0..3 {
            for p in bpos[b] as usize..bpos[b + 1] as usize {
                for c in 0..3 {
                    ccrd.push(bcrd[p] * 3 + c as u32);
                    cvalues.push(bvalues[9 * p + 3 * r + c]);
                }
            }
            cpos.push(ccrd.len() as u32);
        }
    }
    let want = plain(&cpos, &ccrd, &cvalues, &x);
    let b = Bsr3::<f64>::from_raw_parts(Bsr3Parts {
        dim_shape: [3 * block_rows, COLS],
        pos_1: bpos,
        crd_1: bcrd,
        values: bvalues,
    })
    .expect("valid BSR");
    assert!(prefetch::enabled(b.values()), "19 MB of values");
    let mut y = vec![f64::NAN; 3 * block_rows];
    b.spmv(&x, &mut y).expect("Bsr3 spmv");
    assert_eq!(y, want, "Bsr3::spmv");
    let mut y = vec![f64::NAN; 3 * block_rows];
    b.spmv_par(&x, &mut y).expect("Bsr3 spmv_par");
    assert_eq!(y, want, "Bsr3::spmv_par");
}
