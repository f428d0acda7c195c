"""`deployplane trace`: the command (`command`), which control plane a resource uses
(`controlplane`), the walk from a resource to what it leads to (`walk`), the reads, GETs
only (`readers`), and the tree with each line's verdict, pure (`tree`, `nodes`)."""
