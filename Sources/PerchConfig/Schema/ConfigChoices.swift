import PerchChat

extension Backend: ConfigChoice, ConfigChoiceNames {}
extension StorageConfiguration.Synchronous: ConfigChoice, ConfigChoiceNames {}
extension Hears: ConfigChoice, ConfigChoiceNames {}
extension GroupType: ConfigChoice, ConfigChoiceNames {}
extension GroupMemberScope: ConfigChoice, ConfigChoiceNames {}
extension PinOverflow: ConfigChoice, ConfigChoiceNames {}
extension PinOverflow: ConfigPlaceholder { public static var placeholder: PinOverflow { .refuse } }
extension NotificationReason: ConfigChoice, ConfigChoiceNames {}
extension UIConfiguration.ReplyType: ConfigChoice, ConfigChoiceNames {}
extension Refusal: ConfigChoice, ConfigChoiceNames {}
