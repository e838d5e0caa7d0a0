"""The decision engine: graph + config + op tables in, placement/precision/partition out."""
