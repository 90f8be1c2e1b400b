// swift-tools-version: 6.1
import PackageDescription

let swift5: [SwiftSetting] = [.swiftLanguageMode(.v5)]

/// The tutorials' programs, each runnable with `swift run -c release <name>`.
let examples: [(name: String, folder: String, vision: Bool)] = [
    ("add-two-numbers", "AddTwoNumbers", false),
    ("two-layer-net", "TwoLayerNet", false),
    ("optimizer-comparison", "OptimizerComparison", false),
    ("fashion-mnist-mlp", "FashionMNISTMLP", true),
    ("convert-checkpoint", "ConvertCheckpoint", false),
    ("checkpoint", "Checkpoint", false),
    ("conv-net", "ConvNet", false),
    ("lenet5", "LeNet5", true),
    ("resnet18", "ResNet18", true),
    ("edge-detection", "EdgeDetection", true),
    ("augmentations", "Augmentations", true),
]

let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")

let package = Package(
    name: "SwiftTorch",
    products: [
        .library(name: "Torch", targets: ["Torch"]),
        .library(name: "TorchVision", targets: ["TorchVision"]),
        .executable(name: "swifttorch", targets: ["SwiftTorchCLI"]),
        .executable(name: "Benchmarks", targets: ["Benchmarks"]),
        .executable(name: "ddp-worker", targets: ["DDPWorker"]),
        .executable(name: "cuda-check", targets: ["CUDACheck"]),
        .executable(name: "ddp-mnist", targets: ["ddp-mnist"]),
    ] + examples.map { .executable(name: $0.name, targets: [$0.name]) },
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Protocol buffers for ONNX models and TensorBoard event files (generated code is committed). No default
        // traits: the BinaryDelimitedStreams one imports Foundation proper, whose ICU data would triple the size of
        // the static binaries (docs/architecture.md §2); the package does not use length-delimited streams.
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0", traits: []),
    ],
    targets: [
        .target(name: "CTorchKernels"),
        // libmpi bound at run time (dlopen) for `dist`: the package builds and tests without MPI.
        .target(name: "CMPIShim", linkerSettings: [.linkedLibrary("dl")]),
        // The CUDA driver, NVRTC, cuBLAS and cuDNN bound at run time (dlopen) for the CUDA backend: the package
        // builds and tests with no CUDA toolkit, header or library installed.
        .target(name: "CCUDAShim", linkerSettings: [.linkedLibrary("dl")]),
        // zlib from the system (Debian: zlib1g-dev) for DEFLATE, gzip and CRC-32 in checkpoints, datasets and PNGs.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // FreeType and fontconfig from the system (Debian: libfreetype-dev, libfontconfig-dev) for plot text.
        .systemLibrary(name: "CFreeType", pkgConfig: "freetype2", providers: [.apt(["libfreetype-dev", "libfontconfig-dev"])]),
        .target(name: "Torch",
                dependencies: ["CTorchKernels", "CMPIShim", "CCUDAShim", "CZlib", "CFreeType",
                               .product(name: "SwiftProtobuf", package: "swift-protobuf")],
                swiftSettings: swift5),
        // libpng and libjpeg(-turbo) from the system (Debian: libpng-dev, libjpeg-dev), found with pkg-config.
        .systemLibrary(name: "CLibPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CLibJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg-dev"])]),
        // setjmp/longjmp-safe decode/encode shims over them, for TorchVision's `io`.
        .target(name: "CImageCodecs", dependencies: ["CLibPNG", "CLibJPEG"]),
        .target(name: "TorchVision", dependencies: ["Torch", "CImageCodecs"], swiftSettings: swift5),
        // Tutorial 000's MLP, shared by the tests and benchmarks that compare it with PyTorch.
        .target(name: "TutorialModels", dependencies: ["Torch"], swiftSettings: swift5),
        .executableTarget(
            name: "SwiftTorchCLI",
            dependencies: ["Torch", "TorchVision", "TutorialModels", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: swift5
        ),
        // Every CUDA op family against the CPU, the training checks and issues 25/26's speed cases, on a GPU machine.
        .executableTarget(name: "CUDACheck", dependencies: ["Torch", "TorchVision", "TutorialModels"], swiftSettings: swift5),
        // What the distributed tests and benchmarks run under mpirun (collective checks, DDP equivalence, failures, timings).
        .executableTarget(name: "DDPWorker", dependencies: ["Torch", "TorchVision", "TutorialModels", "CMPIShim"], swiftSettings: swift5),
        .executableTarget(name: "ddp-mnist", dependencies: ["Torch", "TorchVision", "TutorialModels", argumentParser],
                          path: "Examples/DDPMNIST", swiftSettings: swift5),
        .executableTarget(name: "Benchmarks", dependencies: ["Torch", "TorchVision", "TutorialModels"], path: "Benchmarks", swiftSettings: swift5),
        // The `--device` option and sample photos the examples share.
        .target(name: "ExampleSupport", dependencies: ["Torch", argumentParser], path: "Examples/ExampleSupport", swiftSettings: swift5),
        .testTarget(name: "TorchTests", dependencies: ["Torch", "TutorialModels", "DDPWorker"], swiftSettings: swift5),
        .testTarget(name: "TorchVisionTests", dependencies: ["TorchVision", "Torch", "TutorialModels"], swiftSettings: swift5),
    ] + examples.map {
        .executableTarget(name: $0.name, dependencies: ($0.vision ? ["Torch", "TorchVision"] : ["Torch"]) + ["ExampleSupport", argumentParser],
                          path: "Examples/\($0.folder)", swiftSettings: swift5)
    }
)
