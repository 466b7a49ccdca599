import PerchChat

extension Backend: ConfigChoice, ConfigChoiceNames {}
extension StorageConfiguration.Synchronous: ConfigChoice, ConfigChoiceNames {}
extension Hears: ConfigChoice, ConfigChoiceNames {}
extension GroupType: ConfigChoice, ConfigChoiceNames {}
extension GroupMemberScope: ConfigChoice, ConfigChoiceNames {}
