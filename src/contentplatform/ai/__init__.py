"""Language models behind one small interface (`base.ChatModel`): the embedded offline writer
(`offline`) and any OpenAI-compatible chat-completions server (`openai_compatible`), chosen from
the settings by `providers.from_settings`."""
