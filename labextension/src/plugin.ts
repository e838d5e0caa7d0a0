/**
 * The package's frontend plugin (next to the MIME renderer in `index.ts`): it only lets report
 * links open folders in the file browser (see `folders.ts`). Typed structurally so the package
 * needs no dependency on @jupyterlab/application for one command call.
 */

import { setFolderOpener } from './folders';

interface Commands {
  execute(id: string, args?: Record<string, unknown>): Promise<unknown>;
}

const plugin = {
  id: 'npu-jupyter:open-folder',
  description: 'Lets npu_jupyter report links open folders in the file browser.',
  autoStart: true,
  activate: (app: { commands: Commands }): void => {
    setFolderOpener(path => {
      void app.commands
        .execute('filebrowser:activate', {})
        .catch(() => undefined)
        .then(() => app.commands.execute('filebrowser:go-to-path', { path }))
        .catch(() => undefined);
    });
  }
};

export default plugin;
