// Tutorial 001's ResNet-18 program: `models.resnet18(pretrained: false)` with its `fc` replaced by
// `nn.Linear(512, numClasses)`, CrossEntropyLoss, SGD (lr 0.001, momentum 0.9), batch 64, RandomCrop(32, padding: 4)
// + RandomHorizontalFlip + ToTensor + Normalize, the loss and the test accuracy after every epoch.
// The tutorial trains on CIFAR-10: pass its folder (holding cifar-10-batches-py/ or cifar-10-batches-bin/) to use it.
// Without one (CIFAR-10 cannot be downloaded here) it trains on Fashion-MNIST, each 28×28 grey image padded to 32×32
// and repeated over three channels.
//
//     swift run -c release resnet18 [--data-dir CIFAR-10-OR-FASHION-MNIST-DIR] [--epochs N] [--max-batches N]
//                                   [--device auto|cpu|cuda|cuda:N]
import ArgumentParser
import ExampleSupport
import Foundation
import Torch
import TorchVision

@main
struct ResNet18: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resnet18", abstract: "Tutorial 001: ResNet-18 trained on CIFAR-10, or on Fashion-MNIST without it.")

    @Option(help: ArgumentHelp("A CIFAR-10 folder (holding cifar-10-batches-py/ or cifar-10-batches-bin/) or a Fashion-MNIST folder.",
                               valueName: "folder"))
    var dataDir = "/usr/share/datasets/fashion-mnist"

    @Option(help: "Number of epochs.")
    var epochs = 10

    @Option(help: "At most this many training batches per epoch (default: all of them).")
    var maxBatches: Int?

    @OptionGroup var placement: DeviceOption

    func validate() throws {
        guard epochs > 0 else { throw ValidationError("--epochs must be a positive integer (got \(epochs))") }
        if let maxBatches, maxBatches <= 0 { throw ValidationError("--max-batches must be a positive integer (got \(maxBatches))") }
    }

    func run() throws {
        let device = try placement.device()
        let folder = dataDir
        let numEpochs = epochs
        let maxBatches = self.maxBatches ?? Int.max
        let useCIFAR = FileManager.default.fileExists(atPath: folder + "/cifar-10-batches-py")
            || FileManager.default.fileExists(atPath: folder + "/cifar-10-batches-bin")

        let batchSize = 64
        let trainLoader: DataLoader<(Tensor, Tensor)>, testLoader: DataLoader<(Tensor, Tensor)>
        do {
            if useCIFAR {
                let train = transforms.Compose([transforms.RandomCrop(32, padding: 4), transforms.RandomHorizontalFlip(),
                                                transforms.ToTensor(), transforms.Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])])
                let test = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])])
                trainLoader = DataLoader(try datasets.CIFAR10(root: folder, train: true, transform: train), batchSize: batchSize, shuffle: true,
                                         pinMemory: device != .cpu)
                testLoader = DataLoader(try datasets.CIFAR10(root: folder, train: false, transform: test), batchSize: batchSize, shuffle: false,
                                        pinMemory: device != .cpu)
                print("ResNet-18 on CIFAR-10 from \(folder)")
            } else {
                let grey = [transforms.ToTensor(), transforms.Normalize([0.5], [0.5]),
                            transforms.Lambda { F.pad($0, [2, 2, 2, 2], value: -1).expand(3, -1, -1) }] as [any transforms.Transform]
                let train = transforms.Compose(grey + [transforms.RandomCrop(32, padding: 4), transforms.RandomHorizontalFlip()])
                trainLoader = DataLoader(try datasets.FashionMNIST(root: folder, train: true, transform: train),
                                         batchSize: batchSize, shuffle: true, pinMemory: device != .cpu)
                testLoader = DataLoader(try datasets.FashionMNIST(root: folder, train: false, transform: transforms.Compose(grey)),
                                        batchSize: batchSize, shuffle: false, pinMemory: device != .cpu)
                print("ResNet-18 on Fashion-MNIST from \(folder) (28×28 grey padded to 32×32, 3 channels); the tutorial uses CIFAR-10")
            }
        } catch {
            print("cannot load the data from \(folder): \(error)\n"
                  + "(pass a CIFAR-10 folder, or install Fashion-MNIST with: apt-get install dataset-fashion-mnist)")
            throw ExitCode.failure
        }

        torch.manualSeed(0)
        let model = models.resnet18(numClasses: 1000)   // pretrained: false
        let numClasses = 10
        model.fc = nn.Linear(512, numClasses)
        model.to(device)

        let criterion = nn.CrossEntropyLoss()
        let optimizer = optim.SGD(model.parameters(), lr: 0.001, momentum: 0.9)

        for epoch in 0..<numEpochs {
            model.train()
            var epochLoss = 0.0, batches = 0
            let start = Date()
            for (cpuImages, cpuLabels) in trainLoader {
                let images = cpuImages.to(device), labels = cpuLabels.to(device)
                let outputs = model(images)
                let loss = criterion(outputs, labels)
                optimizer.zeroGrad()
                loss.backward()
                optimizer.step()
                epochLoss += loss.item()
                batches += 1
                if batches >= maxBatches { break }
            }
            print(String(format: "Epoch %d/%d, Loss: %.4f (%d batches, %.1f s)", epoch + 1, numEpochs,
                         epochLoss / Double(batches), batches, Date().timeIntervalSince(start)))

            model.eval()
            var correct = 0.0, total = 0.0
            torch.noGrad {
                for (cpuImages, cpuLabels) in testLoader {
                    let images = cpuImages.to(device), labels = cpuLabels.to(device)
                    let outputs = model(images)
                    let (_, predicted) = torch.max(outputs.data, dim: 1)
                    total += Double(labels.size(0))
                    correct += (predicted .== labels).sum().item()
                }
            }
            print(String(format: "Epoch [%d/%d], Test Accuracy: %.2f%%", epoch + 1, numEpochs, 100 * correct / total))
        }
    }
}
