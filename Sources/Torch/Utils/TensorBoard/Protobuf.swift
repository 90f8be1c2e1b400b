// The few protobuf messages TensorBoard reads (Event, Summary, HistogramProto, Summary.Image,
// TensorProto), encoded by hand: docs/formats.md §3.2 has the field table.

/// Appends protobuf wire-format fields to `bytes`.
struct ProtoWriter {
    var bytes: [UInt8] = []

    mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 { bytes.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        bytes.append(UInt8(v))
    }
    mutating func key(_ field: Int, _ wireType: Int) { varint(UInt64(field << 3 | wireType)) }

    /// An int64/int32/enum/bool field (negative values take 10 bytes, as protobuf's int64).
    mutating func int(_ field: Int, _ v: Int) { key(field, 0); varint(UInt64(bitPattern: Int64(v))) }
    mutating func double(_ field: Int, _ v: Double) {
        key(field, 1)
        bytes += withUnsafeBytes(of: v.bitPattern.littleEndian, Array.init)
    }
    mutating func float(_ field: Int, _ v: Float) {
        key(field, 5)
        bytes += withUnsafeBytes(of: v.bitPattern.littleEndian, Array.init)
    }
    mutating func data(_ field: Int, _ d: [UInt8]) { key(field, 2); varint(UInt64(d.count)); bytes += d }
    mutating func string(_ field: Int, _ s: String) { data(field, Array(s.utf8)) }
    mutating func message(_ field: Int, _ m: ProtoWriter) { data(field, m.bytes) }
    mutating func packedDoubles(_ field: Int, _ values: [Double]) {
        var body: [UInt8] = []
        body.reserveCapacity(values.count * 8)
        for v in values { body += withUnsafeBytes(of: v.bitPattern.littleEndian, Array.init) }
        data(field, body)
    }
}

/// Builders for the messages the writer emits.
enum TBProto {
    /// `Event{wall_time, step, summary{value}}`.
    static func event(wallTime: Double, step: Int, value: ProtoWriter) -> [UInt8] {
        var summary = ProtoWriter()
        summary.message(1, value)
        var e = ProtoWriter()
        e.double(1, wallTime)
        if step != 0 { e.int(2, step) }
        e.message(5, summary)
        return e.bytes
    }

    /// `Summary.Value{tag, simple_value}`: the scalar form EventAccumulator reads.
    static func scalar(_ tag: String, _ v: Double) -> ProtoWriter {
        var w = ProtoWriter()
        w.string(1, tag)
        w.float(2, Float(v))
        return w
    }

    /// `Summary.Value{tag, histo}`.
    static func histogram(_ tag: String, _ h: HistogramSummary) -> ProtoWriter {
        var p = ProtoWriter()
        p.double(1, h.min); p.double(2, h.max); p.double(3, Double(h.num)); p.double(4, h.sum); p.double(5, h.sumSquares)
        p.packedDoubles(6, h.bucketLimit)
        p.packedDoubles(7, h.bucket)
        var w = ProtoWriter()
        w.string(1, tag)
        w.message(5, p)
        return w
    }

    /// `Summary.Value{tag, image{height, width, colorspace, encoded_image_string}}`.
    static func image(_ tag: String, png: [UInt8], height: Int, width: Int, channels: Int) -> ProtoWriter {
        var img = ProtoWriter()
        img.int(1, height); img.int(2, width); img.int(3, channels)
        img.data(4, png)
        var w = ProtoWriter()
        w.string(1, tag)
        w.message(4, img)
        return w
    }

    /// `Summary.Value{tag + "/text_summary", metadata{plugin "text"}, tensor{DT_STRING, [1], text}}`, as PyTorch.
    static func text(_ tag: String, _ text: String) -> ProtoWriter {
        var plugin = ProtoWriter()
        plugin.string(1, "text")
        plugin.data(2, [])           // TextPluginData(version=0) serializes to nothing
        var meta = ProtoWriter()
        meta.message(1, plugin)
        var dim = ProtoWriter()
        dim.int(1, 1)
        var shape = ProtoWriter()
        shape.message(2, dim)
        var tensor = ProtoWriter()
        tensor.int(1, 7)             // DT_STRING
        tensor.message(2, shape)
        tensor.string(8, text)
        var w = ProtoWriter()
        w.string(1, tag + "/text_summary")
        w.message(8, tensor)
        w.message(9, meta)
        return w
    }
}
