#!/usr/bin/env python3
"""Reads a SwiftTorch TensorBoard run (also `swifttorch train --logdir DIR`: scalars and the model graph) with TensorBoard's own EventAccumulator and lists what it finds
(not run by the tests; needs `pip install tensorboard`).

    SWIFTTORCH_TB_KEEP=/tmp/tbrun swift test --skip-build --filter TensorBoardTests/testScalarsTextAndImagesReadBack
    python3 scripts/check_tensorboard.py /tmp/tbrun
"""
import os
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main(run):
    runs = [run] + [os.path.join(run, d) for d in sorted(os.listdir(run)) if os.path.isdir(os.path.join(run, d))]
    for path in runs:
        acc = EventAccumulator(path, size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0})
        acc.Reload()
        tags = acc.Tags()
        print(f"== {path}")
        for tag in tags["scalars"]:
            print("scalar", tag, [(e.step, round(e.value, 6)) for e in acc.Scalars(tag)])
        for tag in tags["histograms"]:
            for e in acc.Histograms(tag):
                h = e.histogram_value
                print("histogram", tag, "step", e.step, "num", h.num, "min", h.min, "max", h.max,
                      "buckets", len(h.bucket), "sum(bucket)", sum(h.bucket))
        for tag in tags["images"]:
            for e in acc.Images(tag):
                print("image", tag, "step", e.step, f"{e.width}x{e.height}", len(e.encoded_image_string), "PNG bytes")
        try:
            hparams = acc.PluginTagToContent("hparams")
        except KeyError:
            hparams = {}
        from tensorboard.plugins.hparams import plugin_data_pb2
        for tag, content in hparams.items():
            data = plugin_data_pb2.HParamsPluginData.FromString(content)
            print("hparams", tag, data.WhichOneof("data"), str(getattr(data, data.WhichOneof("data"))).replace("\n", " ")[:160])
        if tags.get("graph"):
            for n in acc.Graph().node:
                shapes = [[d.size for d in s.dim] for s in n.attr["_output_shapes"].list.shape]
                print("graph node", n.name, n.op, list(n.input), shapes)
        for tag in tags["tensors"]:
            for e in acc.Tensors(tag):
                print("tensor", tag, "step", e.step, e.tensor_proto.string_val)
        if len(sys.argv) > 2:
            from PIL import Image
            import io
            for tag in tags["images"]:
                im = Image.open(io.BytesIO(acc.Images(tag)[0].encoded_image_string))
                im.load()
                print("PIL decodes", tag, im.mode, im.size, im.getpixel((1, 0)))


if __name__ == "__main__":
    main(sys.argv[1])
