//! The log's vocabulary as types: [`EntryType`] (an entry's `type`) and
//! [`Role`] (a message's `role`), each with the names pi and oh-my-pi write
//! and an `Other` variant that keeps any other name verbatim.
//!
//! The known names are listed once, in the macro call below; everything else
//! (`ALL`, parsing, `as_str`, the index cache's one-byte codes) is derived
//! from that list. Parsing a known name allocates nothing, and an unknown
//! name of up to 24 bytes is held inline ([`CompactString`]).

use std::fmt;
use std::str::FromStr;

use compact_str::CompactString;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            #[doc = concat!("A ", $what, " Arbor does not know, kept verbatim. Made by parsing, so it never holds a known name.")]
            Other(CompactString),
        }

        impl $name {
            #[doc = concat!("Every known ", $what, ", in the order of the documentation (the index cache codes each by its position here).")]
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            #[doc = concat!("The ", $what, " as written in a session file.")]
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )*
                    $name::Other(name) => name,
                }
            }

            #[doc = concat!("The ", $what, " named `name`: a known variant, or [`", stringify!($name), "::Other`].")]
            pub fn parse(name: &str) -> $name {
                match name {
                    $( $text => $name::$variant, )*
                    other => $name::Other(CompactString::from(other)),
                }
            }

            /// True for a name Arbor knows (not `Other`).
            pub fn is_known(&self) -> bool {
                !matches!(self, $name::Other(_))
            }
        }
    };
}

vocabulary! {
    /// An entry's `type` (docs/format.md, "Entries" and "oh-my-pi additions").
    ///
    /// ```
    /// use arbor_log::EntryType;
    ///
    /// assert_eq!(EntryType::parse("compaction"), EntryType::Compaction);
    /// assert_eq!(EntryType::Compaction.as_str(), "compaction");
    /// assert!(!EntryType::parse("future_thing").is_known());
    /// ```
    EntryType, "entry type" {
        /// `message`: an agent message (any role).
        Message = "message",
        /// `thinking_level_change`.
        ThinkingLevelChange = "thinking_level_change",
        /// `model_change`.
        ModelChange = "model_change",
        /// `compaction`: a summary replacing the path before `firstKeptEntryId`.
        Compaction = "compaction",
        /// `branch_summary`: what an abandoned branch held.
        BranchSummary = "branch_summary",
        /// `custom`: extension state, never part of the context.
        Custom = "custom",
        /// `custom_message`: an extension message that is part of the context.
        CustomMessage = "custom_message",
        /// `label`: sets or clears an entry's label.
        Label = "label",
        /// `session_info`: the session's display name.
        SessionInfo = "session_info",
        /// oh-my-pi's `ttsr_injection`.
        TtsrInjection = "ttsr_injection",
        /// oh-my-pi's `mode_change`.
        ModeChange = "mode_change",
    }
}

vocabulary! {
    /// A message's `role` (docs/format.md, "Message roles").
    ///
    /// ```
    /// use arbor_log::Role;
    ///
    /// assert_eq!(Role::parse("toolResult"), Role::ToolResult);
    /// assert_eq!(Role::ToolResult.to_string(), "toolResult");
    /// ```
    Role, "message role" {
        /// `user`.
        User = "user",
        /// `assistant`: a model's reply.
        Assistant = "assistant",
        /// `toolResult`: the result of a tool call.
        ToolResult = "toolResult",
        /// `bashExecution`: a `!` command run by the user.
        BashExecution = "bashExecution",
        /// `custom`: an extension message.
        Custom = "custom",
        /// `branchSummary` (made in memory from a `branch_summary` entry).
        BranchSummary = "branchSummary",
        /// `compactionSummary` (made in memory from a `compaction` entry).
        CompactionSummary = "compactionSummary",
        /// `hookMessage`: the legacy name of `custom`.
        HookMessage = "hookMessage",
        /// `developer` (oh-my-pi).
        Developer = "developer",
    }
}

macro_rules! string_like {
    ($($name:ident),*) => {$(
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(name: &str) -> $name {
                $name::parse(name)
            }
        }

        impl FromStr for $name {
            type Err = std::convert::Infallible;
            fn from_str(name: &str) -> Result<$name, Self::Err> {
                Ok($name::parse(name))
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a string")
                    }
                    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<$name, E> {
                        Ok($name::parse(s))
                    }
                }
                d.deserialize_str(V)
            }
        }
    )*};
}

string_like!(EntryType, Role);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_name_round_trips_and_others_are_kept() {
        for t in EntryType::ALL {
            assert_eq!(&EntryType::parse(t.as_str()), t);
            assert!(t.is_known());
        }
        for r in Role::ALL {
            assert_eq!(&Role::parse(r.as_str()), r);
        }
        let odd = EntryType::parse("future_thing");
        assert_eq!(odd, EntryType::Other("future_thing".into()));
        assert_eq!(odd.to_string(), "future_thing");
        assert!(!odd.is_known());
        assert_eq!(Role::from("fileMention").as_str(), "fileMention");
        assert_eq!(EntryType::ALL.len(), 11);
        assert_eq!(Role::ALL.len(), 9);
    }

    #[test]
    fn serde_is_the_string_and_names_compare_with_str() {
        let v = serde_json::to_value([Role::ToolResult, Role::parse("narrator")]).unwrap();
        assert_eq!(v, serde_json::json!(["toolResult", "narrator"]));
        let back: Vec<Role> = serde_json::from_value(v).unwrap();
        assert_eq!(back, [Role::ToolResult, Role::Other("narrator".into())]);
        assert_eq!(EntryType::Label.as_str(), "label");
        assert_eq!(std::mem::size_of::<EntryType>(), std::mem::size_of::<CompactString>());
    }
}
