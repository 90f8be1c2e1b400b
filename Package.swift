// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "SwiftTorch",
    products: [
        .library(name: "Torch", targets: ["Torch"]),
        .library(name: "TorchVision", targets: ["TorchVision"]),
        .executable(name: "Benchmarks", targets: ["Benchmarks"]),
    ],
    targets: [
        .target(
            name: "CTorchKernels"
        ),
        .target(
            name: "Torch",
            dependencies: ["CTorchKernels"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .target(
            name: "TorchVision",
            dependencies: ["Torch"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "Benchmarks",
            dependencies: ["Torch"],
            path: "Benchmarks",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "convert-checkpoint",
            dependencies: ["Torch"],
            path: "Examples/ConvertCheckpoint",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "TorchTests",
            dependencies: ["Torch"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "TorchVisionTests",
            dependencies: ["TorchVision", "Torch"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
