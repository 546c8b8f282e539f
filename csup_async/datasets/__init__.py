"""Many objects read as one: a :class:`~.dataset.Dataset` of :class:`~.fragment.Fragment` s."""
