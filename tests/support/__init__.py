"""What tests and benchmarks share: servers, proxies, strategies, builders, paths."""
