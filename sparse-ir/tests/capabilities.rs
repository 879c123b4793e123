//! The level formats' capabilities as data: the exact table (TACO's mode-format properties,
//! MLIR's level buffers), and the rules every format's row must obey.

use sparse_ir::ir::{LevelFormat as F, LevelType};
use sparse_ir::level::{PositionCount as C, PositionsArray as P};

const ALL: [F; 6] = [
    F::Dense,
    F::Batch,
    F::Compressed,
    F::LooseCompressed,
    F::Singleton,
    F::NOutOfM { n: 2, m: 4 },
];

#[test]
fn table() {
    // (positions, coordinates, count, full, compact, branchless, locate, append, insert, batch)
    let rows = [
        (
            P::None,
            false,
            C::LevelSize,
            true,
            true,
            false,
            true,
            false,
            true,
            false,
        ),
        (
            P::None,
            false,
            C::LevelSize,
            true,
            true,
            false,
            true,
            false,
            true,
            true,
        ),
        (
            P::SegmentBounds,
            true,
            C::Stored,
            false,
            true,
            false,
            false,
            true,
            false,
            false,
        ),
        (
            P::LoHiPairs,
            true,
            C::Stored,
            false,
            false,
            false,
            false,
            true,
            false,
            false,
        ),
        (
            P::None,
            true,
            C::OnePerParent,
            false,
            true,
            true,
            false,
            true,
            false,
            false,
        ),
        (
            P::None,
            true,
            C::NPerParent,
            false,
            true,
            false,
            false,
            true,
            false,
            false,
        ),
    ];
    for (f, row) in ALL.iter().zip(rows) {
        let c = f.capabilities();
        let got = (
            c.positions,
            c.coordinates,
            c.count,
            c.full,
            c.compact,
            c.branchless,
            c.locate,
            c.append,
            c.insert,
            c.batch,
        );
        assert_eq!(got, row, "{}", f.mlir_name());
    }
}

#[test]
fn level_type_helpers_read_the_capabilities() {
    let names = |pred: fn(&LevelType) -> bool| -> Vec<String> {
        ALL.iter()
            .map(|&f| LevelType::new(f))
            .filter(pred)
            .map(|t| t.format.mlir_name())
            .collect()
    };
    assert_eq!(names(LevelType::is_dense), ["dense", "batch"]);
    assert_eq!(
        names(LevelType::has_positions),
        ["compressed", "loose_compressed"]
    );
    assert_eq!(
        names(LevelType::has_coordinates),
        [
            "compressed",
            "loose_compressed",
            "singleton",
            "structured[2, 4]"
        ]
    );
    assert_eq!(F::NOutOfM { n: 2, m: 4 }.n_per_parent(), Some(2));
    assert_eq!(F::Compressed.n_per_parent(), None);
}

#[test]
fn rows_are_consistent() {
    for f in ALL {
        let c = f.capabilities();
        let name = f.mlir_name();
        // A full level stores nothing and can locate; a stored one appends.
        assert_eq!(c.full, !c.coordinates, "{name}");
        assert_eq!(c.full, c.locate, "{name}");
        assert_eq!(c.append, c.coordinates, "{name}");
        // Positions exist exactly where the count is what was stored.
        assert_eq!(c.positions != P::None, c.count == C::Stored, "{name}");
        // Only loose segments may leave gaps; batch levels are full.
        assert_eq!(!c.compact, c.positions == P::LoHiPairs, "{name}");
        assert!(!c.batch || c.full, "{name}");
        assert_eq!(c.branchless, c.count == C::OnePerParent, "{name}");
    }
}
