use std::hint::black_box;
use std::time::Instant;
sparse::sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
}
fn main() {
    let only = std::env::args().nth(1);
    let coo = sparse::runtime::mmio::read_matrix_market(std::path::Path::new("/work/shared/data/bcsstk16.mtx")).unwrap().tensor;
    let base: Vec<([usize; 2], f64)> = coo.iter().map(|(c, v)| ([c[0], c[1]], *v)).collect();
    let n0 = coo.shape[0];
    let copies = 40;
    let shape = [n0 * copies, n0 * copies];
    let mut entries = Vec::with_capacity(base.len() * copies);
    for k in 0..copies { for &([i, j], v) in &base { entries.push(([i + k * n0, j + k * n0], v)); } }
    let mut s = 0x5eed_u64;
    for i in (1..entries.len()).rev() {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        entries.swap(i, ((z ^ (z >> 31)) % (i as u64 + 1)) as usize);
    }
    let mut tri = sprs::TriMat::<f64>::with_capacity((shape[0], shape[1]), entries.len());
    for &([i, j], v) in &entries { tri.add_triplet(i, j, v); }
    let mut best = [f64::MAX; 2];
    for _ in 0..5 {
        if only.as_deref() != Some("sprs") {
            let t = Instant::now();
            black_box(Csr::from_coo(shape, entries.iter().copied()).unwrap());
            best[0] = best[0].min(t.elapsed().as_secs_f64());
        }
        if only.as_deref() != Some("ours") {
            let t = Instant::now();
            black_box(tri.to_csr::<usize>());
            best[1] = best[1].min(t.elapsed().as_secs_f64());
        }
    }
    println!("nnz {} ours {:.1} ms sprs {:.1} ms ratio {:.2}", entries.len(), best[0]*1e3, best[1]*1e3, best[1]/best[0]);
}
