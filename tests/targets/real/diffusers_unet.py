"""A tiny diffusers ``UNet2DModel`` (random weights from a small config; nothing is downloaded), called
as a denoising step calls it: ``unet(sample, timestep)``. It returns a ``UNet2DOutput``, which diffusers
registers with pytree without a ``flatten_with_keys_fn``: the output walk must not need key paths."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402


def build():
    torch.manual_seed(0)
    from diffusers import UNet2DModel

    unet = UNet2DModel(
        sample_size=16,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(16, 32),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=8,
        attention_head_dim=8,
    ).eval()
    sample = torch.randn(2, 3, 16, 16)
    timestep = torch.tensor([10, 500])
    return unet, (sample, timestep)
