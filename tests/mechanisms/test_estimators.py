import numpy as np
import pytest

from dp2pub.mechanisms.estimators import clip_normalize, postprocess, project_simplex


def test_clip_normalize_by_hand():
    assert np.allclose(clip_normalize(np.array([0.6, -0.2, 0.6])), [0.5, 0.0, 0.5])
    assert np.allclose(clip_normalize(np.array([-1.0, -2.0])), [0.5, 0.5])


def test_projection_by_hand():
    # (0.8, 0.6, -0.4): theta = (0.8 + 0.6 - 1) / 2 = 0.2 -> (0.6, 0.4, 0)
    assert np.allclose(project_simplex(np.array([0.8, 0.6, -0.4])), [0.6, 0.4, 0.0])
    point = np.array([0.2, 0.3, 0.5])
    assert np.allclose(project_simplex(point), point)


def test_projection_is_the_closest_point_of_the_simplex():
    rng = np.random.default_rng(3)
    for _ in range(50):
        x = rng.normal(0.2, 0.5, size=6)
        proj = project_simplex(x)
        assert proj.min() >= 0 and proj.sum() == pytest.approx(1.0)
        others = rng.dirichlet(np.ones(6), size=2000)
        assert np.linalg.norm(x - proj) <= np.linalg.norm(x - others, axis=1).min() + 1e-12


def test_projection_keeps_the_shape_of_a_joint_table():
    table = np.array([[0.5, -0.1], [0.4, 0.3]])
    out = project_simplex(table)
    assert out.shape == (2, 2) and out.sum() == pytest.approx(1.0) and out.min() >= 0


def test_postprocess_refuses_none():
    with pytest.raises(ValueError, match="not a post-processing"):
        postprocess(np.ones(2) / 2, "none")
