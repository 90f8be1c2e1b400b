// Tutorial 001's fixed-kernel convolution and pooling on a real photo: the picture converted to grey, a 3×3
// edge-detection kernel (centre 1, neighbours -1/9) set as a bias-free Conv2d's weight, then 2×2 average and max
// pooling. Prints the shapes the tutorial prints and writes the three results as PNG files.
//
//     swift run -c release edge-detection [--image image.png|jpg] [--output-dir DIR] [--device cpu|cuda|cuda:N]
// Without --image it uses scikit-image's chelsea.png from the PyTorch virtualenv (pip install scikit-image).
import ArgumentParser
import ExampleSupport
import Foundation
import Torch
import TorchVision

@main
struct EdgeDetection: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edge-detection", abstract: "Tutorial 001: an edge-detection convolution and 2×2 pooling on a photo.")

    @Option(help: ArgumentHelp("The photo (PNG or JPEG; default: scikit-image's chelsea.png from /root/torchenv or ~/torchenv).",
                               valueName: "path"))
    var image: String?

    @Option(help: ArgumentHelp("The folder that receives edges.png, edges-avgpool.png and edges-maxpool.png.", valueName: "folder"))
    var outputDir = "."

    @Option(help: "Where to run the convolution and pooling: cpu (the default), cuda, cuda:N, or auto (CUDA where a GPU is usable).",
            transform: Device.init(choosing:))
    var device: Device?

    func run() throws {
        guard let path = self.image ?? scikitImagePhoto("chelsea.png") else {
            print("usage: edge-detection --image IMAGE [--output-dir FOLDER] (no default photo: pip install scikit-image to get one)")
            throw ExitCode.failure
        }
        let outFolder = outputDir
        let device = self.device ?? .cpu

        do {
            var image = try Image.open(path)
            image = image.convert(.L)                                  // grey: one channel
            let imageTensor = transforms.ToTensor()(image) as Tensor
            print(imageTensor.shape)
            let input = imageTensor.unsqueeze(0).to(device)            // a batch of one
            print("input shape", input.shape)

            let kernel = torch.ones(3, 3) / -9                         // neighbours -1/9
            kernel[1][1] = torch.tensor(1.0)                           // centre 1
            let layer = nn.Conv2d(1, 1, [3, 3], bias: false)
            layer.weight.data = kernel.view(1, 1, 3, 3)
            layer.to(device)
            let output = torch.noGrad { layer(input) }
            print("output shape", output.shape)

            let avg = nn.AvgPool2d(kernelSize: 2, stride: 2)(output)
            print(avg.shape)
            let max = nn.MaxPool2d(kernelSize: 2, stride: 2)(output)
            print(max.shape)

            for (name, t) in [("edges", output), ("edges-avgpool", avg), ("edges-maxpool", max)] {
                let file = "\(outFolder)/\(name).png"
                let picture: Image = transforms.ToPILImage()(t.squeeze(0).clamp(min: 0, max: 1).cpu())
                try picture.save(file)
                print("wrote", file)
            }
        } catch {
            print("edge-detection: \(error)")
            throw ExitCode.failure
        }
    }
}
