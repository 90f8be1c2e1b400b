extension utils.tensorboard {
    /// A hyperparameter value for ``SummaryWriter/addHparams(_:_:hparamDomainDiscrete:runName:globalStep:)``:
    /// a number (Bools count as 1/0, as in PyTorch) or a string.
    public enum HParamValue: Equatable, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
                             ExpressibleByStringLiteral, ExpressibleByBooleanLiteral {
        case number(Double)
        case string(String)
        public init(integerLiteral v: Int) { self = .number(Double(v)) }
        public init(floatLiteral v: Double) { self = .number(v) }
        public init(stringLiteral v: String) { self = .string(v) }
        public init(booleanLiteral v: Bool) { self = .number(v ? 1 : 0) }
    }
}

/// The hparams plugin's protos (tensorboard/plugins/hparams/{plugin_data,api}.proto).
private enum HParamsProto {
    /// google.protobuf.Value: number_value 2, string_value 3.
    static func value(_ v: utils.tensorboard.HParamValue) -> ProtoWriter {
        var w = ProtoWriter()
        switch v {
        case .number(let d): w.double(2, d)
        case .string(let s): w.string(3, s)
        }
        return w
    }

    /// `Summary.Value{tag, metadata{plugin_data{"hparams", HParamsPluginData{version 0, <field>: body}}}}`.
    static func summaryValue(tag: String, field: Int, body: ProtoWriter) -> ProtoWriter {
        var data = ProtoWriter()
        data.message(field, body)
        var plugin = ProtoWriter()
        plugin.string(1, "hparams")
        plugin.data(2, data.bytes)
        var meta = ProtoWriter()
        meta.message(1, plugin)
        var w = ProtoWriter()
        w.string(1, tag)
        w.message(9, meta)
        return w
    }
}

extension utils.tensorboard.SummaryWriter {
    /// Logs a run's hyperparameters and final metrics for TensorBoard's HPARAMS tab (`add_hparams`):
    /// the experiment, session-start and session-end summaries plus one scalar per metric, in the
    /// sub-folder `runName` (default: the current Unix time), as PyTorch writes them.
    ///
    /// ```swift
    /// writer.addHparams(["lr": 0.1, "bsize": 32, "optimizer": "sgd"], ["hparam/accuracy": 0.93])
    /// ```
    public func addHparams(_ hparamDict: [String: utils.tensorboard.HParamValue], _ metricDict: [String: Double],
                           hparamDomainDiscrete: [String: [utils.tensorboard.HParamValue]] = [:],
                           runName: String? = nil, globalStep: Int? = nil) {
        var start = ProtoWriter()       // SessionStartInfo
        var experiment = ProtoWriter()  // Experiment
        for (k, v) in hparamDict.sorted(by: { $0.key < $1.key }) {
            var entry = ProtoWriter()
            entry.string(1, k)
            entry.message(2, HParamsProto.value(v))
            start.message(1, entry)
            var info = ProtoWriter()    // HParamInfo: name 1, type 4 (STRING 1, FLOAT64 3), domain_discrete 5
            info.string(1, k)
            if case .string = v { info.int(4, 1) } else { info.int(4, 3) }
            if let domain = hparamDomainDiscrete[k] {
                var list = ProtoWriter()
                for d in domain { list.message(1, HParamsProto.value(d)) }
                info.message(5, list)
            }
            experiment.message(4, info)
        }
        for k in metricDict.keys.sorted() {
            var name = ProtoWriter()
            name.string(2, k)
            var metric = ProtoWriter()
            metric.message(1, name)
            experiment.message(5, metric)
        }
        var end = ProtoWriter()         // SessionEndInfo{status: STATUS_SUCCESS}
        end.int(1, 1)
        let run = runName ?? "\(Date().timeIntervalSince1970)"
        let dir = PathString.join(logDir, run)
        do {
            let sub = try utils.tensorboard.SummaryWriter(logDir: dir)
            sub.emit(sub.writer, HParamsProto.summaryValue(tag: "_hparams_/experiment", field: 2, body: experiment), globalStep, nil)
            sub.emit(sub.writer, HParamsProto.summaryValue(tag: "_hparams_/session_start_info", field: 3, body: start), globalStep, nil)
            sub.emit(sub.writer, HParamsProto.summaryValue(tag: "_hparams_/session_end_info", field: 4, body: end), globalStep, nil)
            for (k, v) in metricDict.sorted(by: { $0.key < $1.key }) { sub.addScalar(k, v, globalStep) }
            try sub.close()
        } catch {
            record(error)
        }
    }
}
