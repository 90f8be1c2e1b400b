import CMPIShim

extension dist {
    /// Sends `tensor` to rank `dst` (PyTorch's `send`); blocks until the buffer can be reused.
    public static func send(_ tensor: Tensor, dst: Int, group: ProcessGroup? = nil, tag: Int = 0) throws {
        let g = resolve(group, "send")
        checkPeer(dst, g, "send", "dst")
        let b = StagedBuffer(tensor, op: "send", reducing: false)
        _ = try g.run("send", async: false, {
            try MPIRuntime.check(stmpi_send(b.pointer, b.count, Int32(b.mpiType.rawValue), Int32(dst), Int32(tag), g.comm), "send")
        })
    }

    /// Receives into `tensor` from rank `src` (any rank when nil) and returns the sender's rank
    /// (PyTorch's `recv`).
    @discardableResult
    public static func recv(_ tensor: Tensor, src: Int? = nil, group: ProcessGroup? = nil, tag: Int = 0) throws -> Int {
        let g = resolve(group, "recv")
        if let src { checkPeer(src, g, "recv", "src") }
        let b = StagedBuffer(tensor, op: "recv", reducing: false, copyIn: false)
        var sender: Int32 = -1
        _ = try withUnsafeMutablePointer(to: &sender) { senderPtr in
            try g.run("recv", async: false, {
                try MPIRuntime.check(stmpi_recv(b.pointer, b.count, Int32(b.mpiType.rawValue), Int32(src ?? -1), Int32(tag),
                                                g.comm, senderPtr), "recv")
            }, finish: { b.writeBack() })
        }
        return Int(sender)
    }

    /// Starts sending `tensor` to rank `dst` (PyTorch's `isend`); keep `tensor` unchanged until
    /// the work is waited on.
    public static func isend(_ tensor: Tensor, dst: Int, group: ProcessGroup? = nil, tag: Int = 0) throws -> Work {
        let g = resolve(group, "isend")
        checkPeer(dst, g, "isend", "dst")
        let b = StagedBuffer(tensor, op: "isend", reducing: false)
        var req: stmpi_request = 0
        try MPIRuntime.check(stmpi_isend(b.pointer, b.count, Int32(b.mpiType.rawValue), Int32(dst), Int32(tag), g.comm, &req), "isend")
        return Work.request(req, op: "isend", timeout: g.timeout) { _ in _ = b }
    }

    /// Starts receiving into `tensor` from rank `src` (any rank when nil; PyTorch's `irecv`);
    /// `tensor` holds the data after `wait()`, and `sourceRank` names the sender.
    public static func irecv(_ tensor: Tensor, src: Int? = nil, group: ProcessGroup? = nil, tag: Int = 0) throws -> Work {
        let g = resolve(group, "irecv")
        if let src { checkPeer(src, g, "irecv", "src") }
        let b = StagedBuffer(tensor, op: "irecv", reducing: false, copyIn: false)
        var req: stmpi_request = 0
        try MPIRuntime.check(stmpi_irecv(b.pointer, b.count, Int32(b.mpiType.rawValue), Int32(src ?? -1), Int32(tag), g.comm, &req), "irecv")
        return Work.request(req, op: "irecv", timeout: g.timeout) { _ in b.writeBack() }
    }

    static func checkPeer(_ r: Int, _ g: ProcessGroup, _ op: String, _ name: String) {
        checkRank(r, g, op, name)
        precondition(r != g.rank, "dist.\(op): Invalid destination rank: \(name) rank \(r) should not be the same as the rank of the current process.")
    }
}
