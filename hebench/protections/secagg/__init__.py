"""SecAgg+ (Bell et al. 2020): pairwise masks, Shamir shares, dropout recovery."""
