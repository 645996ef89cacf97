import numpy as np
import pytest

from dp2pub.data import Dataset, Domain, make_synthetic
from dp2pub.validation import ConfigError


def test_shape_domains_and_uniform_values():
    data = make_synthetic(n=20_000, d=6, k_min=3, k_max=7, rng=np.random.default_rng(0))
    assert (data.n, data.d) == (20_000, 6)
    sizes = data.domain.sizes
    assert sizes.min() >= 3 and sizes.max() <= 7
    assert np.all(data.codes.max(axis=0) == sizes - 1) and data.codes.min() == 0
    for j, k in enumerate(sizes):
        freq = np.bincount(data.codes[:, j], minlength=k) / data.n
        # each frequency is within 4.5 standard errors of 1/k
        assert np.all(np.abs(freq - 1 / k) <= 4.5 * np.sqrt((1 / k) * (1 - 1 / k) / data.n))


def test_same_generator_state_same_data():
    a = make_synthetic(n=100, d=3, k_min=2, k_max=5, rng=np.random.default_rng(42))
    b = make_synthetic(n=100, d=3, k_min=2, k_max=5, rng=np.random.default_rng(42))
    assert np.array_equal(a.codes, b.codes) and a.domain == b.domain


def test_fingerprint_is_the_content_whatever_the_code_dtype():
    data = make_synthetic(n=500, d=4, k_min=2, k_max=6, rng=np.random.default_rng(3))
    wide = Dataset(data.codes.astype(np.int64), data.domain, name=data.name)
    assert wide.fingerprint() == data.fingerprint() and len(data.fingerprint()) == 64
    codes = data.codes.copy()
    codes[0, 0] = (codes[0, 0] + 1) % data.domain.sizes[0]
    assert data.with_codes(codes).fingerprint() != data.fingerprint()
    assert Dataset(data.codes, data.domain, name="renamed").fingerprint() != data.fingerprint()


@pytest.mark.parametrize(
    "kwargs,key",
    [
        ({"n": 0}, "n=0"),
        ({"d": 0}, "d=0"),
        ({"k_min": 1}, "k_min=1"),
        ({"k_min": 20, "k_max": 10}, "k_min=20"),
        ({"n": 2.5}, "n=2.5"),
    ],
)
def test_bad_parameters_name_the_key_and_range(kwargs, key):
    params = {"n": 10, "d": 2, "k_min": 2, "k_max": 4, **kwargs}
    with pytest.raises(ConfigError, match=key):
        make_synthetic(rng=np.random.default_rng(0), **params)


def test_dataset_checks_codes_against_the_domain():
    with pytest.raises(ValueError, match="outside 0..1"):
        Dataset(np.array([[0], [2]]), Domain.from_sizes([2]))
    with pytest.raises(ValueError, match="empty"):
        Dataset(np.zeros((0, 1), dtype=int), Domain.from_sizes([2]))


def test_to_frame_uses_labels():
    domain = Domain(("color",), (("red", "blue"),))
    frame = Dataset(np.array([[1], [0]]), domain).to_frame()
    assert frame["color"].tolist() == ["blue", "red"]
