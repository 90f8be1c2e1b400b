import Torch

/// The settings a training run is defined by, stored in its checkpoints: resuming checks them.
struct RunConfig: Equatable {
    var model: String
    var dataset: String
    var hidden: String
    var optimizer: String
    var scheduler: String
    var lr: Double
    var momentum: Double
    var weightDecay: Double
    var batchSize: Int
    var seed: UInt64
    /// `--augment`'s steps (`crop`, `flip`, `crop,flip`), empty without augmentation.
    var augment: String

    var stateValue: StateValue {
        .dict([
            (key: .string("model"), value: .string(model)), (key: .string("dataset"), value: .string(dataset)),
            (key: .string("hidden"), value: .string(hidden)), (key: .string("optimizer"), value: .string(optimizer)),
            (key: .string("scheduler"), value: .string(scheduler)), (key: .string("lr"), value: .double(lr)),
            (key: .string("momentum"), value: .double(momentum)), (key: .string("weight_decay"), value: .double(weightDecay)),
            (key: .string("batch_size"), value: .int(batchSize)), (key: .string("seed"), value: .int(Int(bitPattern: UInt(seed)))),
            (key: .string("augment"), value: .string(augment)),
        ])
    }

    init(model: String, dataset: String, hidden: String, optimizer: String, scheduler: String, lr: Double,
         momentum: Double, weightDecay: Double, batchSize: Int, seed: UInt64, augment: String) {
        (self.model, self.dataset, self.hidden, self.optimizer, self.scheduler) = (model, dataset, hidden, optimizer, scheduler)
        (self.lr, self.momentum, self.weightDecay, self.batchSize, self.seed) = (lr, momentum, weightDecay, batchSize, seed)
        self.augment = augment
    }

    init?(_ v: StateValue) {
        guard let model = v["model"]?.stringValue, let dataset = v["dataset"]?.stringValue,
              let hidden = v["hidden"]?.stringValue, let optimizer = v["optimizer"]?.stringValue,
              let scheduler = v["scheduler"]?.stringValue, let lr = v["lr"]?.doubleValue,
              let momentum = v["momentum"]?.doubleValue, let wd = v["weight_decay"]?.doubleValue,
              let bs = v["batch_size"]?.intValue, let seed = v["seed"]?.intValue else { return nil }
        self.init(model: model, dataset: dataset, hidden: hidden, optimizer: optimizer, scheduler: scheduler, lr: lr,
                  momentum: momentum, weightDecay: wd, batchSize: bs, seed: UInt64(UInt(bitPattern: seed)),
                  // Checkpoints written before --augment existed trained without it.
                  augment: v["augment"]?.stringValue ?? "")
    }

    /// The options that differ from `other`, spelled as command-line flags.
    func differences(from other: RunConfig) -> [String] {
        var out: [String] = []
        func check<T: Equatable>(_ flag: String, _ a: T, _ b: T) { if a != b { out.append("\(flag) \(b) (given: \(a))") } }
        check("--model", model, other.model); check("--dataset", dataset, other.dataset)
        check("--hidden", hidden, other.hidden); check("--optimizer", optimizer, other.optimizer)
        check("--scheduler", scheduler, other.scheduler); check("--lr", lr, other.lr)
        check("--momentum", momentum, other.momentum); check("--weight-decay", weightDecay, other.weightDecay)
        check("--batch-size", batchSize, other.batchSize); check("--seed", seed, other.seed)
        if augment != other.augment { out.append(other.augment.isEmpty ? "no --augment" : "--augment \(other.augment) (given: \(augment.isEmpty ? "none" : augment))") }
        return out
    }
}

/// Everything a run needs to continue bit for bit: weights, optimizer and scheduler state, the
/// default generator's state, the epochs done and the settings. Saved with `torch.save` (atomic)
/// as a PyTorch-style dictionary: `model_state_dict`, `optimizer_state_dict`, ...
struct TrainingCheckpoint {
    let epoch: Int
    let config: RunConfig
    let model: StateValue
    let optimizer: StateValue
    let scheduler: StateValue?
    /// `--amp fp16`'s GradScaler state.
    var scaler: StateValue? = nil
    let rngState: Tensor
    let history: [[String: Double]]

    static func modelValue(_ m: nn.Module) -> StateValue {
        .dict(m.stateDict().map { (key: .string($0.key), value: .tensor($0.value)) })
    }

    func save(_ path: String) throws {
        var entries: [(key: StateValue, value: StateValue)] = [
            (key: .string("epoch"), value: .int(epoch)),
            (key: .string("config"), value: config.stateValue),
            (key: .string("model_state_dict"), value: model),
            (key: .string("optimizer_state_dict"), value: optimizer),
            (key: .string("rng_state"), value: .tensor(rngState)),
            (key: .string("history"), value: .list(history.map { h in
                .dict(h.sorted { $0.key < $1.key }.map { (key: .string($0.key), value: .double($0.value)) })
            })),
        ]
        if let scheduler { entries.append((key: .string("scheduler_state_dict"), value: scheduler)) }
        if let scaler { entries.append((key: .string("scaler_state_dict"), value: scaler)) }
        try torch.save(.dict(entries), path)
    }

    /// Reads a checkpoint written by ``save(_:)``.
    /// - Throws: `CLIError.badCheckpoint` when the file is not one.
    static func load(_ path: String) throws -> TrainingCheckpoint {
        let v = try torch.load(path)
        guard let epoch = v["epoch"]?.intValue, let config = v["config"].flatMap(RunConfig.init),
              let model = v["model_state_dict"], let optimizer = v["optimizer_state_dict"],
              let rng = v["rng_state"]?.tensorValue else {
            throw CLIError.badCheckpoint(path: path, reason: "not a training checkpoint of `swifttorch train --checkpoint` (it needs epoch, config, model_state_dict, optimizer_state_dict and rng_state)")
        }
        let history = (v["history"]?.arrayValue ?? []).map { h in
            Dictionary(uniqueKeysWithValues: (h.dictValue ?? []).compactMap { e in
                e.key.stringValue.flatMap { k in e.value.doubleValue.map { (k, $0) } }
            })
        }
        return TrainingCheckpoint(epoch: epoch, config: config, model: model, optimizer: optimizer,
                                  scheduler: v["scheduler_state_dict"], scaler: v["scaler_state_dict"], rngState: rng,
                                  history: history)
    }
}

/// Checks, before any work, that a file can be created at `path` (the folder exists and is
/// writable), naming the path and the option it came from.
func checkWritable(_ path: String, option: String) throws {
    let dir = PathString.deletingLastComponent(path)
    let folder = dir.isEmpty ? "." : dir
    guard FileManager.default.fileExists(atPath: folder) else {
        throw CLIError.unwritable(path: path, reason: "\(option): the folder '\(folder)' does not exist")
    }
    guard PathString.isDirectory(folder) else { throw CLIError.unwritable(path: path, reason: "\(option): '\(folder)' is not a folder") }
    guard FileManager.default.isWritableFile(atPath: folder) else {
        throw CLIError.unwritable(path: path, reason: "\(option): the folder '\(folder)' is not writable")
    }
    if PathString.isDirectory(path) {
        throw CLIError.unwritable(path: path, reason: "\(option): '\(path)' is a folder")
    }
}
