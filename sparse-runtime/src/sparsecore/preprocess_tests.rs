//! Unit tests of the preprocessing with exact arrays (reference §4 to §6 and the public checks).

use super::*;

const P: i32 = PAD;

fn cfg(s: u32, max_ids: u32, max_unique: u32) -> PreprocessConfig {
    PreprocessConfig::new(s, 1, 1, max_ids, max_unique)
}

fn feature(samples: &[Vec<i64>]) -> Feature {
    Feature::from_samples("f", samples, None).unwrap()
}

#[test]
fn public_check_eight_samples_of_0_1_2_3() {
    let f = feature(&vec![vec![0, 1, 2, 3]; 8]);
    let out = preprocess(&cfg(4, 8, 8), &[f]).unwrap();
    let d = &out.devices[0];
    for k in 0..4 {
        assert_eq!(
            d.row_pointers[k * 8..k * 8 + 8],
            [2, 10, 18, 26, 32, 32, 32, 32]
        );
    }
    assert_eq!(d.embedding_ids.len(), 128);
    let seg: Vec<i32> = d.embedding_ids[..32].to_vec();
    let mut want = vec![P; 32];
    let mut samples = [P; 32];
    for p in 0..4 {
        want[p * 8] = 0;
        want[p * 8 + 1] = 0;
        samples[p * 8] = 0;
        samples[p * 8 + 1] = 1;
    }
    assert_eq!(seg, want);
    assert_eq!(d.sample_ids[32..64], samples[..]);
    assert_eq!(d.gains[0], 1.0);
    assert!(d.gains[2].is_nan());
    assert_eq!(d.max_ids_per_partition, vec![2, 2, 2, 2]);
    assert_eq!(d.max_unique_ids_per_partition, vec![1, 1, 1, 1]);
    assert_eq!(d.required_buffer_size, vec![32, 32, 32, 32]);
    assert_eq!(
        d.coo[1][0],
        CooEntry {
            row_id: 2,
            col_id: 0,
            gain: 1.0
        }
    );
    assert_eq!((out.dropped_id_count, out.num_minibatches), (0, 1));
}
