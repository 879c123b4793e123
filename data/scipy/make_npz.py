"""Writes the SciPy sparse files the npz tests read (run with SciPy installed:
`python3 make_npz.py`). The matrix is 4 x 6 with entries k + 1 at (i, j) for a fixed pattern."""
import numpy as np
import scipy.sparse as sp

dense = np.zeros((4, 6))
for k, (i, j) in enumerate([(0, 0), (0, 4), (1, 1), (1, 5), (2, 2), (3, 0), (3, 3)]):
    dense[i, j] = k + 1.0
sp.save_npz("csr.npz", sp.csr_matrix(dense))
sp.save_npz("csc.npz", sp.csc_matrix(dense))
sp.save_npz("coo.npz", sp.coo_matrix(dense))
sp.save_npz("bsr.npz", sp.bsr_matrix(dense, blocksize=(2, 3)))
