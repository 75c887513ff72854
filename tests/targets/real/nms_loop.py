"""A detector head with a hand-written non-maximum suppression (issue 34): a Linear layer predicts
boxes and scores, then a `while` loop keeps the best box and drops the ones that overlap it, calling
an `iou` helper on the shrinking set of candidates. The `.item()` inside the loop is a graph break
in a loop (GB7000): Dynamo skips the whole `forward` and runs it eagerly, and compiles `iou` as a
frame of its own, which recompiles within the first call as the candidates shrink.

Inputs are fixed (seeded), so the loop runs the same iterations every time."""

import torch
from torch import nn

import tcdoctor

ANCHORS = 64
FEATURES = 16
IOU_THRESHOLD = 0.3


def iou(box, boxes):
    """Intersection over union of one box [4] with each row of boxes [n, 4] (x1, y1, x2, y2)."""
    x1 = torch.maximum(box[0], boxes[:, 0])
    y1 = torch.maximum(box[1], boxes[:, 1])
    x2 = torch.minimum(box[2], boxes[:, 2])
    y2 = torch.minimum(box[3], boxes[:, 3])
    inter = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / (area + areas - inter)


class Detector(nn.Module):
    def __init__(self, features=FEATURES):
        super().__init__()
        self.head = nn.Linear(features, 5)

    def forward(self, x):
        out = self.head(x)
        centre = out[:, :2].sigmoid()
        size = out[:, 2:4].sigmoid() * 0.5 + 0.1
        boxes = torch.cat([centre - size / 2, centre + size / 2], dim=1)
        scores = out[:, 4].sigmoid()
        order = scores.argsort(descending=True)
        keep = []
        while order.numel() > 0:
            i = order[0].item()
            keep.append(i)
            if order.numel() == 1:
                break
            overlap = iou(boxes[i], boxes[order[1:]])
            order = order[1:][overlap <= IOU_THRESHOLD]
        return boxes[keep], scores[keep]


def build():
    torch.manual_seed(1)  # iou sees 63, 46, 32, 9, 7, 6, 3, then 1 candidates
    return Detector().eval(), (torch.randn(ANCHORS, FEATURES),)


def build_with_variant():
    """The same detector, then 48 anchors: `iou`'s dynamic entry (and its 1-row one) serve every
    candidate count of the second call, so it adds no recompile to the first call's two."""
    model, (x,) = build()
    torch.manual_seed(2)
    return tcdoctor.Workload(model, (x,), variants=[(torch.randn(48, FEATURES),)])
