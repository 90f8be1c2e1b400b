// Every TorchVision augmentation on one photo, as tutorial 001 shows its transforms: the picture is read as a
// PIL-style Image, made 192×192 (Resize + CenterCrop), each transform is applied to it, and the results are laid
// out with utils.makeGrid and written with utils.saveImage (one row of six per line of the printed legend).
//
//     swift run -c release augmentations [--image image.png|jpg] [--output output.png]
// Without --image it uses scikit-image's astronaut.png from the PyTorch virtualenv (pip install scikit-image).
import ArgumentParser
import ExampleSupport
import Foundation
import Torch
import TorchVision

@main
struct Augmentations: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "augmentations", abstract: "Every TorchVision augmentation on one photo, laid out in one grid.")

    @Option(help: ArgumentHelp("The photo (PNG or JPEG; default: scikit-image's astronaut.png from /root/torchenv or ~/torchenv).",
                               valueName: "path"))
    var image: String?

    @Option(help: ArgumentHelp("The PNG file the grid is written to.", valueName: "path"))
    var output = "augmentations.png"

    func run() throws {
        guard let path = image ?? scikitImagePhoto("astronaut.png") else {
            print("usage: augmentations --image IMAGE [--output OUTPUT.png]")
            print("No image given, and scikit-image's astronaut.png was not found in /root/torchenv or ~/torchenv")
            print("(pip install scikit-image into that virtualenv to get it, or pass any PNG or JPEG).")
            throw ExitCode.failure
        }

        torch.manualSeed(0)
        let size = 192
        let prepare = transforms.Compose([transforms.Resize(size), transforms.CenterCrop(size)])
        /// Back to the grid's cell size after transforms that change it.
        let fit = transforms.Compose([transforms.Resize(size), transforms.CenterCrop(size)])

        let augmentations: [(String, any transforms.Transform)] = [
            ("original", transforms.Lambda { $0 }),
            ("RandomCrop(160, padding: 16)", transforms.RandomCrop(160, padding: 16)),
            ("RandomResizedCrop(192)", transforms.RandomResizedCrop(192)),
            ("RandomHorizontalFlip(p: 1)", transforms.RandomHorizontalFlip(p: 1)),
            ("RandomVerticalFlip(p: 1)", transforms.RandomVerticalFlip(p: 1)),
            ("Pad(24, reflect)", transforms.Pad(24, paddingMode: .reflect)),
            ("RandomRotation(30)", transforms.RandomRotation(30)),
            ("RandomAffine(20, translate, scale, shear)", transforms.RandomAffine(20, translate: (0.1, 0.1), scale: (0.8, 1.2), shear: [10])),
            ("RandomPerspective(p: 1)", transforms.RandomPerspective(distortionScale: 0.5, p: 1)),
            ("ElasticTransform(alpha: 80)", transforms.ElasticTransform(alpha: 80)),
            ("ColorJitter(0.5, 0.5, 0.5, 0.2)", transforms.ColorJitter(brightness: 0.5, contrast: 0.5, saturation: 0.5, hue: 0.2)),
            ("Grayscale(3)", transforms.Grayscale(3)),
            ("GaussianBlur(9, sigma: 3)", transforms.GaussianBlur(9, sigma: 3)),
            ("RandomInvert(p: 1)", transforms.RandomInvert(p: 1)),
            ("RandomPosterize(bits: 2, p: 1)", transforms.RandomPosterize(bits: 2, p: 1)),
            ("RandomSolarize(threshold: 128, p: 1)", transforms.RandomSolarize(threshold: 128, p: 1)),
            ("RandomAdjustSharpness(4, p: 1)", transforms.RandomAdjustSharpness(sharpnessFactor: 4, p: 1)),
            ("RandomAutocontrast(p: 1)", transforms.RandomAutocontrast(p: 1)),
            ("RandomEqualize(p: 1)", transforms.RandomEqualize(p: 1)),
            ("AutoAugment(.imagenet)", transforms.AutoAugment(.imagenet)),
            ("AutoAugment(.cifar10)", transforms.AutoAugment(.cifar10)),
            ("AutoAugment(.svhn)", transforms.AutoAugment(.svhn)),
            ("RandAugment()", transforms.RandAugment()),
            ("TrivialAugmentWide()", transforms.TrivialAugmentWide()),
            ("AugMix()", transforms.AugMix()),
            ("RandomErasing(p: 1) on the tensor", transforms.Compose([transforms.PILToTensor(), transforms.ConvertImageDtype(.float32),
                                                                      transforms.RandomErasing(p: 1), transforms.ConvertImageDtype(.uint8)])),
        ]

        do {
            let photo: Image = prepare(try Image.open(path).convert(.RGB))
            var cells: [Tensor] = []
            for (k, (name, t)) in augmentations.enumerated() {
                let out = t.apply(.image(photo.tensor()))
                var pixels = out.value
                if pixels.shape[1] != size || pixels.shape[2] != size { pixels = fit(pixels) }
                cells.append(pixels.to(.float32) / 255)
                print("row \(k / 6 + 1), column \(k % 6 + 1): \(name)")
            }
            try utils.saveImage(torch.stack(cells), output, nrow: 6, padding: 4, padValue: 1)
            print("wrote \(output) (\(cells.count) pictures from \(path))")
        } catch {
            print("augmentations: \(error)")
            throw ExitCode.failure
        }
    }
}
