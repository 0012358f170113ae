"""Which skills and rules a query meets: ranking, trigger lookup, the inverted index and rule
patterns, and the fired-rule type the runtime reads. No ORM: the read model feeds it plain rows."""
