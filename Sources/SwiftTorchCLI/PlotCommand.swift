import ArgumentParser
import Torch
import TorchVision

struct Plot: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw the scalar curves of TensorBoard event files (loss, accuracy, ...) as SVG and PNG.",
        discussion: """
            Tags are grouped by their first component: Loss/train and Loss/test become one chart, Loss, with two \
            curves. Event files in sub-folders (several runs, add_scalars) are curves of their own.
            """)

    @Argument(help: "A folder with events.out.tfevents.* files (searched recursively).")
    var logdir: String

    @Option(help: ArgumentHelp("Folder for the charts (default <logdir>/plots).", valueName: "folder"))
    var output: String?

    @Option(help: "svg, png or both.")
    var format: Format = .both

    @Flag(help: "Logarithmic y axis for Loss charts.")
    var logLoss = false

    enum Format: String, ExpressibleByArgument, CaseIterable { case svg, png, both }

    func validate() throws {
        guard PathString.isDirectory(logdir) else {
            throw ValidationError("<logdir> '\(logdir)': no such folder")
        }
    }

    mutating func run() throws {
        let scalars = try utils.tensorboard.EventFileReader.scalars(logDir: logdir)
        guard !scalars.isEmpty else { throw CLIError.noScalars(logDir: logdir) }
        let outDir = output ?? PathString.join(logdir, "plots")
        do {
            try FileManager.default.createDirectory(atPath: outDir, withIntermediateDirectories: true)
        } catch {
            throw CLIError.unwritable(path: outDir, reason: errorDescription(error))
        }
        // Group "Loss/train", "Loss/test" under "Loss"; "run1/Loss/train" under "Loss" too, labelled "run1/train".
        var groups: [String: [(String, [utils.tensorboard.ScalarEvent])]] = [:]
        for (tag, events) in scalars {
            var parts = tag.split(separator: "/").map(String.init)
            let group: String, label: String
            if let i = parts.firstIndex(where: { ["Loss", "Accuracy", "LR"].contains($0) }) {
                group = parts[i]
                parts.remove(at: i)
                label = parts.isEmpty ? group : parts.joined(separator: "/")
            } else {
                group = parts[0]
                label = parts.count > 1 ? parts.dropFirst().joined(separator: "/") : parts[0]
            }
            groups[group, default: []].append((label, events))
        }
        for (group, curves) in groups.sorted(by: { $0.key < $1.key }) {
            var chart = utils.plot.LineChart(title: group, xLabel: "epoch", yLabel: group.lowercased(),
                                             yScale: logLoss && group.lowercased().firstRange(of: "loss") != nil ? .log : .linear)
            for (label, events) in curves.sorted(by: { $0.0 < $1.0 }) {
                chart.plot(events.map(\.value), x: events.map { Double($0.step) }, label: label)
            }
            let base = PathString.join(outDir, group.replacing(" ", with: "_"))
            if format != .png {
                try chart.saveSVG(base + ".svg")
                print("wrote \(base).svg")
            }
            if format != .svg {
                try chart.savePNG(base + ".png")
                print("wrote \(base).png")
            }
        }
    }
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the version, threads, vector instruction set, datasets found, image libraries and models.")

    mutating func run() throws {
        print("swifttorch \(torch.version)")
        print("threads: \(torch.getNumThreads()) (of \(ProcessInfo.processInfo.activeProcessorCount) cores; --threads or torch.setNumThreads to change)")
        print("cpu capability: \(torch.backends.cpu.getCPUCapability()) (CTORCH_ISA=baseline|avx2|avx512 lowers it)")
        printCUDAInfo()
        print("datasets:")
        print("  digits: embedded (1797 8×8 images)")
        for choice in [DatasetChoice.mnist, .fashionMNIST, .cifar10] {
            let dir = choice.defaultDataDir!
            let found = FileManager.default.fileExists(atPath: dir)
            print("  \(choice): \(dir) \(found ? "(found)" : "(not found; give --data-dir)")")
        }
        print("image libraries: \(io.imageLibraries)")
        print("hub cache: \(models.checkpointDirectory)")
        print("models: mlp, cnn, lenet5, \(models.listModels().joined(separator: ", "))")
    }
}

/// `swifttorch info`'s CUDA lines: the GPUs, the driver and the libraries found, or why CUDA is unusable.
func printCUDAInfo() {
    let status = CUDAInfo.current
    if let why = status.reason {
        print("cuda: not available: \(why)")
    } else {
        print("cuda: available\(status.emulated ? " (host emulator: SWIFTTORCH_CUDA_EMULATOR=1)" : ""), driver \(status.driver)")
        for (i, name) in status.devices.enumerated() { print("  cuda:\(i): \(name)") }
    }
    for (name, path) in status.libraries { print("  \(name): \(path ?? "not found")") }
}
