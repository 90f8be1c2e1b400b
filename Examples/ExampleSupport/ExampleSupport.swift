// What the tutorial examples share: the `--device` option and the sample photos they default to.
import ArgumentParser
import Foundation
import Torch

/// The `--device` option every example takes, as `@OptionGroup var placement: DeviceOption`.
///
/// ```swift
/// let device = try placement.device()     // cuda where a GPU is usable, else cpu
/// ```
public struct DeviceOption: ParsableArguments {
    @Option(name: .customLong("device"),
            help: "Where to run: auto (the default: CUDA where a GPU is usable, else the CPU), cpu, cuda or cuda:N.",
            transform: Device.init(choosing:))
    var choice: Device?

    public init() {}

    /// The device given with `--device`, or `auto`'s choice when none was given.
    public func device() throws -> Device { try choice ?? Device(choosing: "auto") }
}

/// The path of scikit-image's sample photo `name` (`astronaut.png`, `chelsea.png`, ...) in a PyTorch virtualenv at
/// `/root/torchenv` or `~/torchenv`, or nil when scikit-image is not installed there.
public func scikitImagePhoto(_ name: String) -> String? {
    let files = FileManager.default
    for venv in ["/root/torchenv", NSHomeDirectory() + "/torchenv"] {
        guard let libs = try? files.contentsOfDirectory(atPath: venv + "/lib") else { continue }
        for lib in libs.sorted() where lib.hasPrefix("python") {
            let path = "\(venv)/lib/\(lib)/site-packages/skimage/data/\(name)"
            if files.fileExists(atPath: path) { return path }
        }
    }
    return nil
}
