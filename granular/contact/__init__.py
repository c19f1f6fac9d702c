"""Contact: detection of feet in the medium and the maximum-dissipation QP with its solvers."""
