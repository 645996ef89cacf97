"""k-anonymity: generalization hierarchies, Samarati, Mondrian and their utility metrics."""
