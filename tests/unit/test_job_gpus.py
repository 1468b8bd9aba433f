"""How many GPUs a job holds (`senpai.fleet.base.job_gpus`): the one count behind every GPU-seconds figure."""

import pytest

from senpai.fleet.base import job_gpus, train_gpus


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, 0),
        ({"CUDA_VISIBLE_DEVICES": ""}, 0),  # the local fleet's CPU-only job
        ({"CUDA_VISIBLE_DEVICES": "0,1"}, 2),  # the local fleet pins ids
        ({"CUDA_VISIBLE_DEVICES": " 3 , ,5"}, 2),
        ({"SENPAI_GPUS": "4"}, 4),  # the Kubernetes fleet: the device plugin sets no CUDA_VISIBLE_DEVICES
        ({"SENPAI_GPUS": "2", "CUDA_VISIBLE_DEVICES": "0"}, 2),  # the fleet's word first
        ({"SENPAI_GPUS": "0", "CUDA_VISIBLE_DEVICES": "0,1"}, 0),
        ({"SENPAI_GPUS": "-1"}, 0),
        ({"SENPAI_GPUS": "two"}, 0),
    ],
)
def test_job_gpus_counts_the_fleets_figure_else_the_visible_devices(env, expected):
    assert job_gpus(env) == expected


def test_train_gpus_is_the_fleets_train_figure_else_the_jobs_own():
    assert train_gpus({"SENPAI_TRAIN_GPUS": "2"}) == 2  # a Kubernetes checkout container: holds none itself
    assert train_gpus({"SENPAI_TRAIN_GPUS": "0", "CUDA_VISIBLE_DEVICES": "0"}) == 0
    assert train_gpus({"CUDA_VISIBLE_DEVICES": "0,1"}) == 2  # the local fleet: one process runs every step
    assert train_gpus({"SENPAI_TRAIN_GPUS": "x", "SENPAI_GPUS": "3"}) == 3
