import PerchChat

extension NotificationRecord {
    /// The notification as the API, the live streams and the webhooks show it: its outbox row
    /// (`id` and `seq` are its sequence), why it was routed, when it was read (0: unread), and its
    /// message (null when the reader may no longer read it), with the thread's parent as
    /// `parentMessage`.
    public var json: String {
        var writer = JSONWriter()
        writer.raw(
            #"{"id":\#(seq),"seq":\#(seq),"messageId":\#(messageId),"reason":"\#(reason.rawValue)","#
                + #""createdAt":\#(createdAt),"readAt":\#(readAt),"uid":"#)
        writer.string(uid)
        writer.raw(#","message":"#)
        if let message { writer.message(message) } else { writer.raw("null") }
        writer.raw("}")
        return writer.output
    }
}
